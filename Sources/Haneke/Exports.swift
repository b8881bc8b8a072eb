// `import Haneke` brings the framework: the protocols and combinators, the memory, file, SQLite and LZ4
// backends, the value formats, and what this module adds (Cache, Format, fetchers, Shared).
// RedisStore is a product of its own (`import RedisStore`): it brings SwiftNIO, which an app that
// only wants a Cache should not have to build.
@_exported public import CompressedStore
@_exported public import FileStore
@_exported public import Formats
@_exported public import HanekeProtocols
@_exported public import MemoryStore
@_exported public import SQLiteStore
// Of HTTPCaching, the types this module's API takes: `cache.fetch(url:headers:)` and
// `NetworkFetcher(headers:)` take HTTPHeaderFields, `NetworkFetcher.Configuration(cachePolicy:)` an
// HTTPCachePolicy. Not the whole module: its HTTPResponse would clash with swift-http-types'
// (which Hummingbird re-exports) in every file that imports both; `import HTTPCaching` for it,
// and for HTTPCache, CacheControl and the rest.
@_exported public import struct HTTPCaching.HTTPHeaderFields
@_exported public import struct HTTPCaching.HTTPCachePolicy
