// CustomType: making your own types cacheable — by hand, or through the Codable bridge.
//
//   swift run CustomType

import Foundation
import Haneke

/// A type added by conformance: 16 bytes, two little-endian doubles. `convertFromData` rejects
/// bytes of the wrong length with a `decoding` error, as every conversion should.
struct Point: Sendable, Equatable, DataConvertible, DataRepresentable {
    var x: Double
    var y: Double

    static func convertFromData(_ data: Data) throws -> Point {
        guard data.count == 16 else {
            throw StoreError(.decoding, "Expected a Point as 16 bytes, found \(data.count)")
        }
        let x = data.prefix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        let y = data.suffix(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Point(x: Double(bitPattern: x), y: Double(bitPattern: y))
    }

    func asData() -> Data {
        let words = [x.bitPattern, y.bitPattern]
        return Data(words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } })
    }
}

/// A type added through the Codable bridge: declaring the two protocols is all it takes (JSON).
struct Recipe: Codable, Sendable, Equatable, DataConvertible, DataRepresentable {
    var title: String
    var minutes: Int
    var ingredients: [String]
}

// A folder of this run's own (a fixed name in the shared temporary folder could be someone else's).
let folder = NSTemporaryDirectory() + "haneke-custom-type-\(UUID().uuidString.prefix(8))"
defer { try? FileManager.default.removeItem(atPath: folder) }
let points = Cache<Point>(name: "points", directory: folder + "/points")
let recipes = Cache<Recipe>(name: "recipes", directory: folder + "/recipes")

try await points.set(Point(x: 1.5, y: -2.25), forKey: "home")
try await recipes.set(Recipe(title: "Pão de Queijo", minutes: 40, ingredients: ["tapioca flour", "milk", "cheese"]), forKey: "brazil")

// Clear memory so the values are decoded from their files on disk.
points.removeAllFromMemory()
recipes.removeAllFromMemory()
print("point from disk:  \(try await points.fetch(key: "home"))")
print("recipe from disk: \(try await recipes.fetch(key: "brazil"))")

// Bytes that are not a Point are a decoding error when read directly, and a miss in a chain.
let bytes = MemoryStore<String, Data>()
bytes.setValue(Data([1, 2, 3]), forKey: "broken")
do {
    _ = try await bytes.coded(as: Point.self).value(forKey: "broken")
} catch let error as StoreError {
    print("decoding error:   \(error.code): \(error.message)")
}
try await points.removeAll()
try await recipes.removeAll()
