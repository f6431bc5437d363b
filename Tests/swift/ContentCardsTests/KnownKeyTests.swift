import Testing
@testable import ContentCards

/// The packed switch (`Parser.knownKey`) is the only way a member name becomes a `KnownKey`:
/// it must know every case, by its name read plainly or through escapes, and nothing else.
struct KnownKeyTests {
    @Test func everyCaseIsFoundByItsName() {
        for key in KnownKey.allCases {
            #expect(Parser.knownKey(named: key.rawValue) == key, "\(key.rawValue)")
            #expect(Parser.knownKey(named: key.rawValue + "x") == nil, "\(key.rawValue)x")
        }
    }

    @Test func otherNamesAreNotKnown() {
        for name in ["", "storagePath", "userId", "ID", "Id", "cards ", "class_type_", "imageAspectRatioX",
                     "id\u{0}", "\u{1}d", "expiresAt\u{0}\u{0}", "classtype", "é"] {
            #expect(Parser.knownKey(named: name) == nil, "\(name.debugDescription)")
        }
    }

    @Test func anEscapedNameIsTheKeyItSpells() throws {
        let text = Array(#""\u0069d""#.utf8)
        try text.withUnsafeBufferPointer { bytes in
            var p = Parser(bytes: bytes, maxDepth: 4)
            let (name, known) = try p.parseKey()
            #expect(name == "id")
            #expect(known == .id)
        }
    }
}
