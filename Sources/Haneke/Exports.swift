// `import Haneke` brings the whole framework: the protocols and combinators, every backend, the
// value formats, and what this module adds (Cache, Format, fetchers, Shared).
@_exported public import CompressedStore
@_exported public import FileStore
@_exported public import Formats
@_exported public import HanekeProtocols
@_exported public import MemoryStore
@_exported public import RedisStore
