import Atomics
import NIOPosix

/// A connection's hold on its client's callbacks while its event loop handles a burst of frames: taken at the first
/// frame that completes something, released by a task the loop runs once the frames it read so far are handled (the
/// transport's reader waits for more then). A transport delivers one event at a time, but not always from one thread
/// (a third-party transport may move between loops): the next event may arrive on another loop while the release
/// runs, so the flag is atomic.
final class CallbackBurst: Sendable {
    private let holding = ManagedAtomic(false)

    func holdCallbacks(of userCode: UserCodeQueue) {
        // The flag guards nothing else: relaxed operations suffice. Already holding (a burst's later frames): done.
        guard !holding.load(ordering: .relaxed), let loop = MultiThreadedEventLoopGroup.currentEventLoop,
            holding.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        else { return }
        userCode.hold()
        loop.execute {
            self.holding.store(false, ordering: .relaxed)
            userCode.release()
        }
    }
}
