import Foundation

// Benchmarks: every figure is printed next to a baseline measured in the same run, with the ratio.
// Run: swift run -c release meteor-ddp-benchmarks [section ...]
//   sections: memory, ejson, database, queries, relationships, ingest, methods, rebase, large, clients,
//   clients-deflate, offline, resume, metrics
//   (and, alone: collation; for profiling: apply, inprocess, pipelined, roundtrip, backlog; MDDP_PROFILE_APPLY=1 makes
//   `apply` run only our side, five times, printing each rate; MDDP_PROFILE_INPROCESS=1 makes `inprocess` run only
//   our side, five times (=changed: the `changed` burst ten times, MDDP_METRICS_BACKEND=1 with a metrics backend);
//   MDDP_BATCH=N sets its clients' bufferedWritesMaxBatchSize; MDDP_PROFILE_PIPELINED=1 makes
//   `pipelined` run only our side, 40 rounds (=raw: only the raw client; =rawloop: only the raw client with its tasks
//   on the event loop); MDDP_PROFILE_ROUNDTRIP=ours|raw makes `roundtrip` run only the calls, or only the bare
//   client's method frames; MDDP_CLIENTS=N sets how many clients `clients` connects; MDDP_STAGES=1 makes it print the
//   memory after creating and after connecting them; with MDDP_TRACE=1 it prints its thread count and glibc's
//   malloc_stats; MDDP_TRACE=1 makes it print when all frames were handed over; MDDP_PROFILE_LARGE=N makes `large`
//   run only N documents, in its own process; MDDP_LARGE_ROUNDS=N sets its rounds (3 unless set))
// With no section, each section runs in a fresh process of its own, so one cannot disturb another's figures
// (memory above all: freed memory from an earlier section would be reused and hide the growth).
let sections = [
    "memory", "ejson", "database", "queries", "relationships", "ingest", "methods", "rebase", "large", "clients",
    "clients-deflate", "offline", "resume", "metrics"
]
let requested = Array(CommandLine.arguments.dropFirst())

if requested.isEmpty {
    let header =
        "MeteorDDP benchmarks (\(ProcessInfo.processInfo.activeProcessorCount) cores), one process per section\n"
    FileHandle.standardOutput.write(Data(header.utf8))
    for section in sections {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = [section]
        try child.run()
        child.waitUntilExit()
    }
} else {
    for section in requested {
        switch section {
        case "memory": DatabaseBenchmarks.memoryPerDocument()
        case "ejson": EJSONBenchmarks.run()
        case "database": DatabaseBenchmarks.run()
        case "queries": QueryBenchmarks.run()
        case "collation": QueryBenchmarks.collatedSort()
        case "metrics": MetricsBenchmarks.run()
        case "relationships": RelationshipBenchmarks.run()
        case "large": DatabaseBenchmarks.largeCache()
        case "clients": try await ManyClientsBenchmarks.run(deflate: false)
        case "clients-deflate": try await ManyClientsBenchmarks.run(deflate: true)
        case "serve-ten": try await ManyClientsBenchmarks.serveTen(deflate: false) // the server process of `clients`
        case "serve-ten-deflate": try await ManyClientsBenchmarks.serveTen(deflate: true)
        case "apply": DatabaseBenchmarks.applyThroughput()
        case "inprocess": IngestBenchmarks.inProcess()
        case "ingest": IngestBenchmarks.run()
        case "methods": MethodBenchmarks.run()
        case "rebase": StubRebaseBenchmarks.run()
        case "pipelined": MethodBenchmarks.pipelinedCalls()
        case "roundtrip": MethodBenchmarks.callRoundTrip()
        case "backlog": MethodBenchmarks.completionsWithBacklog()
        case "resume": ResumptionBenchmarks.run()
        case "offline": await OfflineBenchmarks.run()
        default:
            print(
                "unknown section \(section); sections: \(sections.joined(separator: ", ")), "
                    + "apply, inprocess, pipelined, roundtrip, backlog, resume"
            )
        }
    }
}
