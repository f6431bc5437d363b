// contentcards-tool: small jobs on the Swift core, used by the tests as a separate process
// and by people to poke at a feed.
//
//   contentcards-tool feed CONFIG_JSON            refresh, print the feed by class type
//   contentcards-tool log-loop CONFIG_JSON N      refresh once, then log N events, printing
//                                                 "logged <event-id>" after each call returns
//                                                 (the crash test kills it at random points)
import ContentCards
#if canImport(Glibc)
import Glibc
#endif

func fail(_ message: String) -> Never {
    fputs("contentcards-tool: \(message)\n", stderr)
    exit(1)
}

func say(_ line: String) {
    fputs(line + "\n", stdout)
    fflush(stdout)
}

let args = CommandLine.arguments
guard args.count >= 3 else {
    fail("usage: contentcards-tool feed CONFIG_JSON | log-loop CONFIG_JSON N")
}

let controller: ContentCardsController
do { controller = try ContentCardsController(json: args[2]) } catch { fail(error.message) }

switch args[1] {
case "feed":
    do {
        let summary = try controller.refresh()
        say("refreshed: \(ResultJSON.summary(summary))")
        let cards = try controller.cards()
        let groups = Dictionary(grouping: cards, by: \.classType)
        for classType in groups.keys.sorted() {
            say(classType.isEmpty ? "(no class type)" : classType)
            for card in groups[classType] ?? [] { say("  \(card.id)  \(card.type.rawValue)  \(card.title ?? card.cardDescription ?? "")") }
        }
        let counts = try controller.counts()
        say("total \(counts.total), unviewed \(counts.unviewed)")
    } catch {
        fail(error.message)
    }
case "log-loop":
    guard args.count >= 4, let n = Int(args[3]) else { fail("log-loop needs a count") }
    do {
        _ = try? controller.refresh()
        let ids = try controller.cards().map(\.id)
        guard !ids.isEmpty else { fail("no cards to log") }
        for i in 0..<n {
            let id = ids[i % ids.count]
            let result = i % 3 == 0 ? try controller.logFeedDisplayed() : try controller.logImpression(cardID: id)
            say("logged \(result.eventID ?? "")")
        }
    } catch {
        fail(error.message)
    }
default:
    fail("unknown command \(args[1])")
}
controller.close()
