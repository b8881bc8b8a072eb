import PrivateCacheHome

/// The cache home of this test process: `XDG_CACHE_HOME` names a new folder in the temporary folder,
/// set before any test runs and removed at exit, so what the tests create at the default location
/// (`Shared`'s caches, a `Cache` without a directory) never reaches the user's real `~/.cache`.
public let privateCacheHome: String = {
    guard let path = haneke_private_cache_home() else { fatalError("the test process has no private cache home") }
    return String(cString: path)
}()
