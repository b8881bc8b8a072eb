import Foundation

/// Where caches keep their files: `$XDG_CACHE_HOME/haneke/<name>/<format>`, or `~/.cache/haneke/...`
/// when `XDG_CACHE_HOME` is not set (the XDG base-directory convention), or the temporary folder
/// when there is no home either.
enum CacheDirectory {
    static func root(forCacheNamed name: String, environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        let base: String
        if let xdg = environment["XDG_CACHE_HOME"], xdg.hasPrefix("/") {
            base = xdg
        } else if let home = environment["HOME"], home.hasPrefix("/") {
            base = home + "/.cache"
        } else {
            base = NSTemporaryDirectory() + "haneke-\(getuid())"
        }
        return base + "/haneke/" + pathComponent(name)
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
