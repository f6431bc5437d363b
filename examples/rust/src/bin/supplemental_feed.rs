//! supplemental_feed: Content Cards blended into the app's own feed, as feed.c and
//! supplemental_feed.py do: home tiles by class type, control cards logged but never drawn, the
//! badge at the end.
use contentcards::{sample_config, Controller, Result};

fn print_class(c: &Controller, title: &str, class_types: &[&str]) -> Result<()> {
    let snap = c.snapshot(Some(class_types))?;
    let counts = c.counts(Some(class_types))?;
    println!("{} ({} cards, {} unviewed)", title, counts.total, counts.unviewed);
    let mut controls = 0;
    for i in 0..snap.len() {
        let id = snap.string(i, "id")?.unwrap_or_default();
        if snap.bool(i, "isControl")? {
            c.log_impression(&id)?; // an A/B test's control card: never drawn, impression logged
            controls += 1;
            continue;
        }
        let kind = snap.string(i, "type")?.unwrap_or_default();
        let text = match snap.string(i, "title")? {
            Some(t) => t,
            None => snap.string(i, "cardDescription")?.unwrap_or_default(),
        };
        let pinned = if snap.bool(i, "pinned")? { "  [pinned]" } else { "" };
        println!("  {:<16} {:<16} {}{}", id, kind, text, pinned);
    }
    if controls > 0 {
        println!("  ({} control card{}: not drawn, impression logged)", controls, if controls == 1 { "" } else { "s" });
    }
    Ok(())
}

fn main() -> Result<()> {
    println!("libcontentcards {} from Rust", contentcards::version());
    let c = Controller::open(&sample_config("demo"))?;
    println!("refreshed: {}\n", c.refresh(10.0)?);
    print_class(&c, "Home tiles", &["home_tile"])?;
    print_class(&c, "Checkout coupons", &["coupon_code"])?;
    print_class(&c, "Without a class type", &[""])?;
    let counts = c.counts(None)?;
    println!("\nbadge: {} unviewed of {}", counts.unviewed, counts.total);
    Ok(())
}
