import Foundation
import TestSupport

/// A small ICC (version 2) RGB display profile, written here: sRGB's primaries with red and green
/// swapped, and a gamma of 2.2. A pixel that is pure red in an image carrying it is pure green once
/// converted to sRGB — which makes the conversion easy to see.
enum ICCProfile {
    static var swappedRedAndGreen: Data {
        // sRGB's colorants adapted to D50, as every ICC profile states them.
        let red = (0.4361, 0.2225, 0.0139), green = (0.3851, 0.7169, 0.0971), blue = (0.1431, 0.0606, 0.7141)
        let d50 = (0.9642, 1.0, 0.8249)

        let description = text("desc", ascii: "red and green swapped")
        let gamma: [UInt8] = Array("curv".utf8) + [0, 0, 0, 0] + PNGWriter.bigEndian(1) + [0x02, 0x33, 0, 0]   // 2.2, padded
        let tags: [(String, [UInt8])] = [
            ("desc", description),
            ("wtpt", xyz(d50)),
            ("rXYZ", xyz(green)),   // the swap
            ("gXYZ", xyz(red)),
            ("bXYZ", xyz(blue)),
            ("rTRC", gamma),
            ("gTRC", gamma),
            ("bTRC", gamma),
        ]
        var table: [UInt8] = PNGWriter.bigEndian(UInt32(tags.count))
        var data: [UInt8] = []
        let dataStart = 128 + 4 + 12 * tags.count
        for (signature, body) in tags {
            table += Array(signature.utf8) + PNGWriter.bigEndian(UInt32(dataStart + data.count)) + PNGWriter.bigEndian(UInt32(body.count))
            data += body
            while data.count % 4 != 0 { data.append(0) }
        }
        let size = dataStart + data.count

        var header = PNGWriter.bigEndian(UInt32(size))
        header += [0, 0, 0, 0]                                  // preferred CMM
        header += [0x02, 0x10, 0x00, 0x00]                      // version 2.1
        header += Array("mntrRGB XYZ ".utf8)                    // display, RGB data, XYZ connection space
        header += [0x07, 0xE8, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0]    // created 2024-01-01 00:00:00
        header += Array("acsp".utf8)
        header += [UInt8](repeating: 0, count: 24)              // platform, flags, manufacturer, model, attributes
        header += PNGWriter.bigEndian(0)                        // perceptual
        header += fixed(d50.0) + fixed(d50.1) + fixed(d50.2)    // the connection space's illuminant
        header += [UInt8](repeating: 0, count: 128 - header.count)
        return Data(header + table + data)
    }

    private static func xyz(_ value: (Double, Double, Double)) -> [UInt8] {
        Array("XYZ ".utf8) + [0, 0, 0, 0] + fixed(value.0) + fixed(value.1) + fixed(value.2)
    }

    /// A version 2 `textDescriptionType`: the ASCII text, and empty Unicode and ScriptCode parts.
    private static func text(_ signature: String, ascii: String) -> [UInt8] {
        let characters = Array(ascii.utf8) + [0]
        return Array(signature.utf8) + [0, 0, 0, 0] + PNGWriter.bigEndian(UInt32(characters.count)) + characters
            + [0, 0, 0, 0] + [0, 0, 0, 0] + [0, 0, 0] + [UInt8](repeating: 0, count: 67)
    }

    /// An s15Fixed16Number.
    private static func fixed(_ value: Double) -> [UInt8] {
        PNGWriter.bigEndian(UInt32(bitPattern: Int32((value * 65_536).rounded())))
    }
}
