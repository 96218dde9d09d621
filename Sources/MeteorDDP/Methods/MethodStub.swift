import EJSON

/// A client-side simulation of a method: runs at once, at call time, inside a database write transaction, so the
/// local cache shows the method's effect before the server answers (latency compensation).
///
/// For example:
/// ```swift
/// client.defineStub("todos.add") { context in
///     guard let text = context.params[0]?.stringValue else { return nil }
///     return try context.collection("todos").insert(["text": .string(text)]).map { .string($0) }
/// }
/// ```
/// A stub with typed parameters decodes them first (a missing or mistyped one throws ``MethodParameterError``):
/// ```swift
/// client.defineStub("todos.add") { (context, text: String) in
///     try context.collection("todos").insert(["text": .string(text)])
/// }
/// ```
/// A stub that throws does not stop the call (Meteor's rule): its error is logged, what it wrote before throwing is
/// kept until the server's answer, and the call goes out; with ``MethodOptions/throwStubExceptions`` the caller gets
/// the error instead and nothing is sent.
public typealias MethodStub = @Sendable (MethodInvocationContext) throws -> EJSONValue?
