import FileStore
package import HanekeProtocols
import SQLiteStore

/// Every disk engine, in the order the `haneke` tool takes them in a folder: `FileStore` first
/// (its files are the folder's), then `SQLiteStore` (its database of small values). The one place
/// an engine is listed: `haneke get` and `haneke trim` loop over it.
package let diskEngines: [any DiskEngine.Type] = [FileStore.self, SQLiteStore.self]
