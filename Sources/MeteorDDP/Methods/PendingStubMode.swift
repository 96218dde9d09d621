/// What the cache shows for a document a pending call's stub wrote when the server's data for it changes before the
/// call is done (``DDPClient/Configuration/pendingStubMode``).
///
/// Take a todo whose stub checked it (`todos.setDone`) while another user renames it, before the server answers:
///
/// | time | server sends            | ``holdServerData`` (Meteor)         | ``rebase``                             |
/// |------|-------------------------|-------------------------------------|----------------------------------------|
/// | t0   |                         | done ✓ (the stub)                   | done ✓ (the stub)                      |
/// | t1   | `changed` title "Milk"  | done ✓, old title (kept aside)      | done ✓, "Milk" (replayed over it)      |
/// | t2   | `changed` done, `updated` | done ✓, "Milk" (the server's version) | done ✓, "Milk" (the server's version) |
public enum PendingStubMode: Sendable, Hashable {
    /// Meteor's rule (the default): while a call is pending, the server's changes to every document its stub wrote
    /// are kept aside, invisible, until the call's `updated`; then the server's version replaces the stub's in one
    /// step. No replay, no flicker, but those documents are frozen at the local version until then.
    case holdServerData
    /// The cache shows the server's newest version of such a document with every pending call's stub replayed over
    /// it, in call order, with its original parameters and random seed (so the ids it makes are the same). Whenever
    /// the server's data for a document a pending stub wrote or read changes, or a call's `updated` takes its stub
    /// out, the stubs concerned are replayed in one transaction with that data: those that wrote or read the
    /// document, and those that wrote or read what they wrote (the others would give what they gave before). A replay
    /// that leaves a document as it was posts no change.
    ///
    /// Stubs must be replayable: they read only the cache and their parameters and write only through their context
    /// (no other side effects); debug builds run every new stub twice over the same state and report one whose writes
    /// differ (``DDPError/Code/stubNotReplayable``). A replay that throws is reported as
    /// ``DDPError/Code/stubReplayFailed`` (the call still goes to the server, whose answer decides).
    ///
    /// DDP does not say which of the server's changes include a call's own writes until its `updated`: a replay over
    /// data that already holds the call's effect applies it twice until then (an `$inc` shows twice; `$set`, an
    /// insert with the shared seed, and a removal do not). Changes and `updated` that arrive together are applied
    /// together, with no replay in between.
    case rebase
}
