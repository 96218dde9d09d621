import EJSON
import Foundation
@_exported import MeteorDDPTesting
@_exported import TestSupport

@testable import MeteorDDP

/// Counts events (completions, torn reads, reads).
typealias CountBox = Locked<Int>
typealias ManagedCounter = Locked<Int>

extension Locked where Value == Int {
    convenience init() { self.init(0) }
    func increment() { mutate { $0 += 1 } }
}

/// A flag one thread raises for others.
typealias ManagedFlag = Locked<Bool>

extension Locked where Value == Bool {
    convenience init() { self.init(false) }
    func set() { mutate { $0 = true } }
    var isSet: Bool { value }
}

/// The outcome of one method call.
typealias ResultBox = Locked<Result<EJSONValue?, any Error>?>

extension Locked where Value == Result<EJSONValue?, any Error>? {
    convenience init() { self.init(nil) }
    func set(_ result: Result<EJSONValue?, any Error>) { mutate { $0 = result } }
    var result: Result<EJSONValue?, any Error>? { value }
}

/// A string seen on another thread (a seed, an id).
typealias SeedBox = Locked<String?>

extension Locked where Value == String? {
    convenience init() { self.init(nil) }
    func set(_ string: String) { mutate { $0 = string } }
}

/// Strings collected from many threads, in arrival order.
typealias ResultsLog = Locked<[String]>
typealias NSLockedArray = Locked<[String]>

extension Locked where Value == [String] {
    convenience init() { self.init([]) }
    func append(_ string: String) { mutate { $0.append(string) } }
    func record(_ id: String, _ result: Result<EJSONValue?, any Error>) { append(id) }
    var values: [String] { value }
    var ids: [String] { value }
}
