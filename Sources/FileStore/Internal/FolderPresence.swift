import StoreFolders

#if canImport(Glibc)
import Glibc
#endif

/// How a `FileStore` tells whether another store has its folder open: each store holds a shared
/// `flock` on the folder's marker while it lives, and when it opens it first asks for an exclusive
/// one, which it gets only if no other store (in another process, or another `FileStore` in this
/// one) holds the folder. The lock is advisory and only ever taken by stores: it guards nothing,
/// it only tells.
/// The descriptor is set once in `init` and closed once in `deinit`; nothing else touches it.
final class FolderPresence: Sendable {
    private let descriptor: Int32?
    /// Whether another store had the folder open when this one opened it.
    let othersPresent: Bool

    /// Opens the marker in `folder` (never through a link) and takes the folder's shared lock.
    /// A marker that cannot be opened or locked is taken as "alone" (nothing can be told).
    init(folder: Int32) {
        let fd = openat(folder, StoreNames.marker, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            descriptor = nil
            othersPresent = false
            return
        }
        descriptor = fd
        if flock(fd, LOCK_EX | LOCK_NB) == 0 {
            othersPresent = false
        } else {
            othersPresent = errno == EWOULDBLOCK
        }
        // Shared from now on, so that the next store to open the folder can tell this one is here
        // (waiting at most for another store's own check, which holds the exclusive lock only
        // between its two calls).
        while flock(fd, LOCK_SH) != 0 && errno == EINTR {}
    }

    deinit {
        if let descriptor { close(descriptor) }
    }
}
