//! coupon: a coupon at checkout, as coupon.c does: the coupon_code card with its
//! discount_percentage is applied; the control card of the A/B test is never shown, but its
//! impression is logged so the experiment can be measured.
use contentcards::{sample_config, Controller, Result};

fn main() -> Result<()> {
    let c = Controller::open(&sample_config("shopper"))?;
    c.refresh(10.0)?;
    let snap = c.snapshot(Some(&["coupon_code"]))?;
    let price = 80.0_f64;
    println!("Checkout: cart total {:.2}", price);
    for i in 0..snap.len() {
        let id = snap.string(i, "id")?.unwrap_or_default();
        c.log_impression(&id)?; // shown, or would have been: both are logged
        if snap.bool(i, "isControl")? {
            println!("  (a control variant: nothing shown, impression logged)");
            continue;
        }
        let discount = snap.extra(i, "discount_percentage")?.unwrap_or_else(|| "0".into());
        let code = snap.extra(i, "coupon_code")?.unwrap_or_else(|| "-".into());
        let pct: f64 = discount.parse().unwrap_or(0.0);
        println!("  coupon {}: {}% off with code {} -> {:.2}", id, discount, code, price * (1.0 - pct / 100.0));
        c.log_click(&id)?; // the shopper applied it
    }
    println!("  events recorded: {}", c.pending_events()?);
    Ok(())
}
