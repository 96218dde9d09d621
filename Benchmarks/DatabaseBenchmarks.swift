enum DatabaseBenchmarks { static func run() {} }
