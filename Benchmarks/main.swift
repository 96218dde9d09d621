import Foundation

// Benchmarks: every figure is printed next to a baseline measured in the same run, with the ratio.
// Run: swift run -c release meteor-ddp-benchmarks [section ...]   (sections: ejson, database, ingest, methods)
let requested = Set(CommandLine.arguments.dropFirst())
func wants(_ section: String) -> Bool { requested.isEmpty || requested.contains(section) }

print("MeteorDDP benchmarks (\(ProcessInfo.processInfo.activeProcessorCount) cores)")
if wants("ejson") { EJSONBenchmarks.run() }
if wants("database") { DatabaseBenchmarks.run() }
if requested.contains("apply") { DatabaseBenchmarks.applyThroughput() }
if wants("ingest") { IngestBenchmarks.run() }
if wants("methods") { MethodBenchmarks.run() }
