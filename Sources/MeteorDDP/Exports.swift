// The EJSON types are part of this library's API (`EJSONValue`, `EJSONObject`, `ObjectID`, `MongoID`, the Codable
// bridge): `import MeteorDDP` names them without a second import.
@_exported import EJSON
