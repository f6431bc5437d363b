import Testing
@testable import ContentCards

/// `UTF8Validation.isValid` steps over ASCII 64 bytes (x86-64), then 32, then 8 at a time: a
/// sequence that is not ASCII must be found at every position in and across those blocks, near
/// the end and not, and judged as the standard library's strict decoder judges it.
struct UTF8ValidationTests {
    /// Sequences valid and not: each kind of length, the edges of overlongs, surrogates and
    /// U+10FFFF, a lone continuation byte, a sequence cut short, bytes never valid.
    static let sequences: [[UInt8]] = [
        [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
        [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xE0, 0xA0, 0x80], [0xED, 0xA0, 0x80],
        [0xED, 0x9F, 0xBF], [0xF0, 0x80, 0x80, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x80], [0xBF],
        [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x98], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0xFE],
    ]

    static func reference(_ bytes: [UInt8]) -> Bool {
        String(validating: bytes, as: UTF8.self) != nil
    }

    static func validated(_ bytes: [UInt8]) -> Bool {
        bytes.withUnsafeBufferPointer { UTF8Validation.isValid($0) }
    }

    @Test func aSequenceAtEveryPositionIsJudgedAsTheStandardLibraryDoes() {
        for sequence in Self.sequences {
            for length in [40, 71, 96, 130, 131, 133] {
                for at in 0...(length - sequence.count) {
                    var bytes = [UInt8](repeating: 0x61, count: length)
                    bytes.replaceSubrange(at..<(at + sequence.count), with: sequence)
                    #expect(Self.validated(bytes) == Self.reference(bytes), "\(sequence) at \(at) of \(length)")
                }
            }
        }
    }

    @Test func aSequenceCutByTheEndIsInvalid() {
        for sequence in Self.sequences where sequence.count > 1 {
            for cut in 1..<sequence.count {
                let bytes = [UInt8](repeating: 0x20, count: 33) + sequence.prefix(cut)
                #expect(!Self.validated(bytes), "\(sequence) cut to \(cut)")
            }
        }
    }

    @Test func randomTextAgreesWithTheStandardLibrary() {
        var rng = SplitMix(seed: 0x5EED)
        for _ in 0..<3_000 {
            var bytes: [UInt8] = []
            let runs = Int(rng.next() % 6)
            for _ in 0...runs {
                bytes += [UInt8](repeating: UInt8(0x20 + rng.next() % 0x5F), count: Int(rng.next() % 150))
                let pick = Self.sequences[Int(rng.next() % UInt64(Self.sequences.count))]
                // Mostly valid sequences, so that a whole text is often valid too.
                bytes += rng.next() % 4 == 0 ? pick : Self.sequences[Int(rng.next() % 4)]
            }
            #expect(Self.validated(bytes) == Self.reference(bytes), "\(bytes)")
        }
    }

    @Test func theEmptyTextAndPlainASCIIAreValid() {
        #expect(Self.validated([]))
        for length in 0..<100 { #expect(Self.validated([UInt8](repeating: 0x7F, count: length))) }
    }
}
