import Foundation

/// An exact Zipf sampler over ranks `1...count` with P(k) ∝ k^(-exponent), using the
/// rejection-inversion method of Hörmann and Derflinger ("Rejection-inversion to generate
/// variates from monotone discrete distributions", 1996): O(1) expected time per sample, no
/// tables, valid for every exponent > 0 (including exactly 1).
///
/// The method inverts the integral H of the continuous hat function h(x) = x^(-exponent) over
/// [1.5, count + 0.5], rounds the result to the nearest integer k and accepts it when the point
/// falls under the histogram bar of k; the acceptance rate is above 90% for every exponent.
struct ZipfSampler: Sendable {
    /// Number of ranks.
    let count: Int
    /// The Zipf exponent s.
    let exponent: Double
    private let integralAtOneHalfMinusOne: Double
    private let integralAtEnd: Double
    private let squeeze: Double

    /// Creates a sampler.
    /// - Parameters:
    ///   - count: Number of ranks, at least 1.
    ///   - exponent: The skew s > 0; larger is more skewed.
    init(count: Int, exponent: Double) {
        precondition(count >= 1, "a Zipf distribution needs at least one rank")
        precondition(exponent > 0, "the Zipf exponent must be positive")
        self.count = count
        self.exponent = exponent
        integralAtOneHalfMinusOne = Self.hIntegral(1.5, exponent) - 1
        integralAtEnd = Self.hIntegral(Double(count) + 0.5, exponent)
        squeeze = 2 - Self.hIntegralInverse(Self.hIntegral(2.5, exponent) - Self.h(2, exponent), exponent)
    }

    /// Draws one rank in `1...count`.
    func sample(using random: inout SimulationRandom) -> Int {
        while true {
            let u = integralAtEnd + random.nextUnitDouble() * (integralAtOneHalfMinusOne - integralAtEnd)
            let x = Self.hIntegralInverse(u, exponent)
            let k = min(max(Int(x + 0.5), 1), count)
            let kd = Double(k)
            if kd - x <= squeeze || u >= Self.hIntegral(kd + 0.5, exponent) - Self.h(kd, exponent) {
                return k
            }
        }
    }

    /// The exact probabilities of ranks `1...ranks` (by summing the normalising constant directly),
    /// used by the self-check to compare empirical frequencies against theory.
    func exactProbabilities(ofFirst ranks: Int) -> [Double] {
        var normaliser = 0.0
        for k in stride(from: count, through: 1, by: -1) {
            normaliser += pow(Double(k), -exponent)
        }
        return (1...max(1, min(ranks, count))).map { pow(Double($0), -exponent) / normaliser }
    }

    /// The hat function h(x) = x^(-s).
    private static func h(_ x: Double, _ s: Double) -> Double {
        exp(-s * log(x))
    }

    /// H(x) = (x^(1-s) - 1) / (1 - s), continuous in s (it is log x at s = 1).
    private static func hIntegral(_ x: Double, _ s: Double) -> Double {
        let logX = log(x)
        return expm1OverX((1 - s) * logX) * logX
    }

    /// The inverse of `hIntegral`.
    private static func hIntegralInverse(_ x: Double, _ s: Double) -> Double {
        var t = x * (1 - s)
        if t < -1 {
            t = -1  // rounding guard: the argument of log1p must stay above -1
        }
        return exp(log1pOverX(t) * x)
    }

    /// log(1 + x) / x, accurate near 0 where the quotient would lose precision.
    private static func log1pOverX(_ x: Double) -> Double {
        if abs(x) > 1e-8 {
            return log1p(x) / x
        }
        return 1 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x))
    }

    /// (e^x - 1) / x, accurate near 0 where the quotient would lose precision.
    private static func expm1OverX(_ x: Double) -> Double {
        if abs(x) > 1e-8 {
            return expm1(x) / x
        }
        return 1 + x * 0.5 * (1 + x * (1.0 / 3.0) * (1 + 0.25 * x))
    }
}
