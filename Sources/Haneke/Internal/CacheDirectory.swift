import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Where caches keep their files, by the XDG base-directory convention:
/// `$XDG_CACHE_HOME/haneke/<name>`, else `$HOME/.cache/haneke/<name>`, else the `.cache` folder in
/// the home folder the password database gives the user (a system service often runs with no
/// `HOME`). There is no fallback to a fixed name in a shared folder such as `/tmp`: another user
/// could create it first and plant values there. With no home at all, the cache keeps its values
/// in memory only.
enum CacheDirectory {
    static func root(
        forCacheNamed name: String,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        homeFromPasswordDatabase: () -> String? = homeFolderOfEffectiveUser
    ) -> String? {
        let base: String
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            base = home + "/.cache"
        } else if let home = homeFromPasswordDatabase() {
            base = home + "/.cache"
        } else {
            return nil
        }
        return base + "/haneke/" + pathComponent(name)
    }

    /// The home folder of the effective user in the password database, or `nil`.
    static func homeFolderOfEffectiveUser() -> String? {
        var entry = passwd()
        var result: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16_384)
        guard getpwuid_r(geteuid(), &entry, &buffer, buffer.count, &result) == 0, result != nil, let directory = entry.pw_dir else { return nil }
        let home = String(cString: directory)
        return home.hasPrefix("/") ? home : nil
    }

    /// A cache or format name as one safe path component: letters, digits, `.`, `_` and `-` stay,
    /// anything else (a `/`, a NUL, a space) is percent-encoded, and `.` and `..` are encoded whole,
    /// so no name can leave the cache's folder.
    static func pathComponent(_ name: String) -> String {
        if name.isEmpty { return "%" }
        if name == "." || name == ".." { return String(repeating: "%2E", count: name.count) }
        var component = ""
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                component.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                component += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return component
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
