import Foundation

/// The app's lifecycle: what a phone does to sockets (see <doc:MobileApps>).
extension DDPClient {
    /// Tells the client the app moved to the background (UIKit's `applicationDidEnterBackground`, SwiftUI's
    /// `scenePhase` becoming `.background`). What follows is ``Configuration/backgroundPolicy``'s: nothing by
    /// default, paused heartbeats, or a disconnect after a grace time. Returns at once.
    public func didEnterBackground() {
        queue.async { self.handle(.enteredBackground) }
    }

    /// Tells the client the app is coming back to the foreground (UIKit's `applicationWillEnterForeground`, SwiftUI's
    /// `scenePhase` becoming `.active`). A client the background policy disconnected connects again; one waiting for
    /// its back-off tries at once; a socket that heard nothing for longer than ``Configuration/heartbeatInterval``
    /// (iOS suspended the app; the socket may be dead while the status still says connected) is pinged and replaced
    /// at once if no frame comes within ``Configuration/foregroundPingTimeout``, instead of after the heartbeat
    /// timeout. With ``Configuration/resumesSessions`` the replacement resumes the session when the server allows.
    /// Returns at once.
    public func willEnterForeground() {
        queue.async {
            let silence = self.lastFramesHandledAt.map { Duration.seconds(self.scheduler.now.timeIntervalSince($0)) }
            self.handle(.enteringForeground(silentFor: self.core.isSocketOpen ? silence : nil))
        }
    }
}
