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
