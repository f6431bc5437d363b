// swift-tools-version:6.0
// contentcards: a Content Cards library with a Swift core and a C ABI.
//
// Products:
//   ContentCards    the Swift core, usable directly from Swift packages.
//   contentcards    libcontentcards.so, the C ABI (include/contentcards.h). The release build
//                   that ships (`make lib`) adds the SONAME, the export list and the static
//                   Swift runtime on the command line, because SwiftPM would otherwise apply
//                   those flags to every binary that links the targets, test runners included.
import PackageDescription

/// Every Swift target's settings: the Swift 5 language mode (the core's concurrency is its own:
/// locks and threads, checked by ThreadSanitizer, not the Swift 6 checker).
let swift5: [SwiftSetting] = [.swiftLanguageMode(.v5)]

let package = Package(
    name: "contentcards",
    products: [
        .library(name: "ContentCards", targets: ["ContentCards"]),
        .library(name: "contentcards", type: .dynamic, targets: ["ContentCardsC"]),
    ],
    targets: [
        // The system's SQLite (libsqlite3-dev); nothing vendored.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        // HTTP through the system's libcurl, dlopen'ed at first use.
        .target(name: "CCurl", path: "Sources/CCurl", linkerSettings: [.linkedLibrary("dl")]),
        // gzip of event batches through the zlib libcurl links (found through libcurl's handle).
        .target(name: "CZlib", dependencies: ["CCurl"], path: "Sources/CZlib"),
        // The JSON reader's vector scans: static inline SSE2 functions in a header, inlined
        // into the Swift that calls them (nothing on other architectures).
        .target(name: "CContentCardsSIMD", path: "Sources/CContentCardsSIMD"),
        // What the core asks of the C library that Swift's Glibc module leaves out (the
        // loaded object's build id, through dl_iterate_phdr).
        .target(name: "CPlatform", path: "Sources/CPlatform"),
        .target(
            name: "ContentCards",
            dependencies: ["CSQLite", "CCurl", "CZlib", "CContentCardsSIMD", "CPlatform"],
            path: "Sources/ContentCards",
            swiftSettings: swift5),
        // The C side of the hot paths: the thread's last error, the badge cells, and the
        // exported cc_controller_counts that reads them without a lock.
        .target(name: "CContentCardsFast", path: "Sources/CContentCardsFast",
                cSettings: [.headerSearchPath("../../include"),
                            .define("CC_COUNT_CELL_HITS", .when(configuration: .debug))]),
        // Definitions that take the place of others in the library's link: the glibc floor
        // (compiled in by `make lib`, with CC_GLIBC_FLOOR) and the Swift runtime's command-line
        // stubs. Nothing imports them (no headers: their folder stands for the include folder);
        // they are linked in as dependencies.
        .target(name: "CGlibcFloor", path: "Sources/CGlibcFloor", publicHeadersPath: "."),
        .target(name: "CSwiftRuntimeStubs", path: "Sources/CSwiftRuntimeStubs", publicHeadersPath: "."),
        // The handwritten header as a module: its types and constants are the ABI's.
        .systemLibrary(name: "CContentCardsABI", path: "Sources/CContentCardsABI"),
        .target(
            name: "ContentCardsC",
            dependencies: ["ContentCards", "CContentCardsABI", "CContentCardsFast", "CGlibcFloor",
                           "CSwiftRuntimeStubs"],
            path: "Sources/ContentCardsC",
            exclude: ["exports.map"],   // the export list, given to the linker by make lib and CMake
            swiftSettings: swift5),
        // Small jobs on the core in a process of their own (the crash and multi-process tests).
        .executableTarget(
            name: "contentcards-tool",
            dependencies: ["ContentCards", "ContentCardsC"],
            path: "Sources/contentcards-tool",
            swiftSettings: swift5),
        // Fuzz targets over the C ABI (see the file's header; `make fuzz`).
        .executableTarget(
            name: "contentcards-fuzz",
            dependencies: ["ContentCardsC", "CContentCardsABI", "ContentCards"],
            path: "Sources/contentcards-fuzz",
            swiftSettings: swift5 + [.unsafeFlags(["-parse-as-library"])]),
        .testTarget(
            name: "ContentCardsTests",
            dependencies: ["ContentCards", "ContentCardsC", "contentcards-tool"],
            path: "Tests/swift/ContentCardsTests",
            resources: [],
            swiftSettings: swift5),
        .testTarget(
            name: "ABITests",
            dependencies: ["ContentCardsC", "CContentCardsABI"],
            path: "Tests/swift/ABITests",
            swiftSettings: swift5),
    ]
)
