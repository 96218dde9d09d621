enum IngestBenchmarks { static func run() {} }
