package import Foundation

/// Which entries of a disk engine a format's preloading reads into memory
/// (``DiskEngine/entriesToPreload(_:)``), as its preload policy says.
package enum PreloadSelection: Sendable, Hashable {
    /// Every entry, most recently used first.
    case all
    /// The entries read or written during the previous session, most recently used first.
    /// `since` is when that session began, by the engines that record sessions (the files'
    /// journal; ``DiskEngine/previousSessionStart``), or `nil` when none is recorded.
    case usedInLastSession(since: Date?)
}
