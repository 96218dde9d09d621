import NIOCore

/// A `TaskExecutor` that runs jobs on one NIO event loop.
///
/// A WebSocket connection's tasks (its reader and writer loops, and swift-websocket's own async code) prefer this
/// executor, so they run on the event loop that owns the socket: handing a frame between the socket and those loops
/// then costs no thread wake-up, which is most of a round trip's latency on loopback.
/// (SPI for the benchmarks, whose raw reference client runs its tasks the same way.)
@_spi(Storage) public final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    public init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute {
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}
