public import Foundation
import Formats

/// Caches shared by the whole program, as HanekeSwift had them, each with the default stack under
/// `$XDG_CACHE_HOME/haneke/shared-<type>`. The `Images` module adds `Shared.imageCache`, a cache of
/// images with resizing formats.
public enum Shared {
    /// A cache of bytes.
    public static let dataCache = Cache<Data>(name: "shared-data")
    /// A cache of UTF-8 strings.
    public static let stringCache = Cache<String>(name: "shared-string")
    /// A cache of JSON documents.
    public static let jsonCache = Cache<JSON>(name: "shared-json")
    /// The cache of JSON documents under its earlier name.
    @available(*, deprecated, renamed: "jsonCache")
    public static var JSONCache: Cache<JSON> { jsonCache }
}
