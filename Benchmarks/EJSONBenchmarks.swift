import DDPTestServer
import EJSON
import Foundation

/// Parsing and serialising a realistic DDP corpus with our EJSON code against Foundation's JSONSerialization.
enum EJSONBenchmarks {
    static func corpus(count: Int) -> [[UInt8]] {
        (0..<count).map { i -> [UInt8] in
            switch i % 10 {
            case 0..<6: return Array(BenchDocuments.addedFrame(i).utf8)
            case 6..<8: return Array(BenchDocuments.changedFrame(i).utf8)
            case 8:
                return Array(
                    (#"{"msg":"result","id":"\#(i)","result":{"_id":"\#(BenchDocuments.id(i))","count":"#
                        + #"\#(i),"at":{"$date":1700000000000}}}"#).utf8)
            default: return Array(#"{"msg":"ping","id":"p\#(i)"}"#.utf8)
            }
        }
    }

    static func run() {
        Bench.section("EJSON: parse a DDP corpus (60% added, 20% changed, 10% result, 10% ping)")
        let frames = corpus(count: 20_000)
        let bytes = frames.reduce(0) { $0 + $1.count }
        print("corpus: \(frames.count) frames, \(bytes / frames.count) bytes/frame on average")
        var sink = 0
        let ours = Bench.medianSeconds {
            for frame in frames {
                let value = try! frame.withUnsafeBufferPointer { try EJSON.parse(bytes: $0) }
                if case .object(let o) = value { sink &+= o.count }
            }
        }
        let datas = frames.map { Data($0) }
        let foundation = Bench.medianSeconds {
            for data in datas {
                let object = try! JSONSerialization.jsonObject(with: data)
                if let o = object as? [String: Any] { sink &+= o.count }
            }
        }
        Bench.report(
            "EJSON.parse(bytes:)", ours: Double(frames.count) / ours, baseline: Double(frames.count) / foundation,
            unit: "msgs/s", baselineName: "JSONSerialization", target: "≥ 2x")
        let strings = frames.map { String(decoding: $0, as: UTF8.self) }
        let fromString = Bench.medianSeconds {
            for frame in strings {
                if case .object(let o) = try! EJSON.parse(frame) { sink &+= o.count }
            }
        }
        Bench.report(
            "EJSON.parse(String) (frames arrive as Strings)", ours: Double(frames.count) / fromString,
            baseline: Double(frames.count) / foundation, unit: "msgs/s", baselineName: "JSONSerialization")

        Bench.section("EJSON: serialise the same messages")
        let values = frames.map { try! EJSON.parse(bytes: $0) }
        let objects = datas.map { try! JSONSerialization.jsonObject(with: $0) }
        let serialize = Bench.medianSeconds {
            for value in values { sink &+= EJSON.serialize(value).count }
        }
        let foundationSerialize = Bench.medianSeconds {
            for object in objects { sink &+= (try! JSONSerialization.data(withJSONObject: object)).count }
        }
        Bench.report(
            "EJSON.serialize", ours: Double(values.count) / serialize,
            baseline: Double(values.count) / foundationSerialize,
            unit: "msgs/s", baselineName: "JSONSerialization.data")
        if sink == 42 { print("") }
    }
}
