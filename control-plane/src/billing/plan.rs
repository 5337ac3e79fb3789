//! The pure step of reconciliation: what Stripe must be told so the team's subscription holds
//! exactly what PostgreSQL says they bought. One item per add-on price, its quantity the number
//! of queues on it and its metadata `queues` their ids; no add-on left means no subscription
//! (Stripe refuses to delete a subscription's last item, so the subscription is cancelled).
//! Creates and updates come before deletes, so an item is never removed while it is the last.

use std::collections::BTreeMap;

/// What the team should pay for: add-on price id → the queue ids on it (sorted).
pub type Desired = BTreeMap<String, Vec<String>>;

/// The team's live subscription as Stripe describes it now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Current {
    pub subscription_id: String,
    pub items: Vec<CurrentItem>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CurrentItem {
    pub id: String,
    pub price: String,
    pub quantity: u64,
    /// The item's `queues` metadata.
    pub queues: String,
}

/// One Stripe write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StripeWrite {
    CreateSubscription { items: Vec<ItemSpec> },
    CreateItem { subscription_id: String, item: ItemSpec },
    UpdateItem { item_id: String, quantity: u64, queues: String },
    DeleteItem { item_id: String },
    CancelSubscription { subscription_id: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemSpec {
    pub price: String,
    pub quantity: u64,
    pub queues: String,
}

impl StripeWrite {
    /// A stable text of the write and its parameters: with the outbox row's id it makes the
    /// Stripe idempotency key, so a retry of the same write is the same request to Stripe.
    pub fn fingerprint(&self) -> String {
        format!("{self:?}")
    }
}

fn spec(price: &str, queues: &[String]) -> ItemSpec {
    ItemSpec { price: price.to_owned(), quantity: queues.len() as u64, queues: queues.join(",") }
}

/// The writes that turn `current` into `desired`.
pub fn plan(desired: &Desired, current: Option<&Current>) -> Vec<StripeWrite> {
    let desired: Vec<(&String, &Vec<String>)> = desired.iter().filter(|(_, queues)| !queues.is_empty()).collect();
    let Some(current) = current else {
        if desired.is_empty() {
            return Vec::new();
        }
        let items = desired.iter().map(|(price, queues)| spec(price, queues)).collect();
        return vec![StripeWrite::CreateSubscription { items }];
    };
    if desired.is_empty() {
        return vec![StripeWrite::CancelSubscription { subscription_id: current.subscription_id.clone() }];
    }
    let mut writes = Vec::new();
    for (price, queues) in &desired {
        let want = spec(price, queues);
        match current.items.iter().find(|item| &item.price == *price) {
            None => {
                writes.push(StripeWrite::CreateItem { subscription_id: current.subscription_id.clone(), item: want })
            }
            Some(item) if item.quantity != want.quantity || item.queues != want.queues => {
                writes.push(StripeWrite::UpdateItem {
                    item_id: item.id.clone(),
                    quantity: want.quantity,
                    queues: want.queues,
                })
            }
            Some(_) => {}
        }
    }
    for item in &current.items {
        if !desired.iter().any(|(price, _)| **price == item.price) {
            writes.push(StripeWrite::DeleteItem { item_id: item.id.clone() });
        }
    }
    writes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desired(entries: &[(&str, &[&str])]) -> Desired {
        entries
            .iter()
            .map(|(price, queues)| (price.to_string(), queues.iter().map(|q| q.to_string()).collect()))
            .collect()
    }

    fn item(id: &str, price: &str, queues: &[&str]) -> CurrentItem {
        CurrentItem { id: id.into(), price: price.into(), quantity: queues.len() as u64, queues: queues.join(",") }
    }

    fn sub(items: Vec<CurrentItem>) -> Current {
        Current { subscription_id: "sub_1".into(), items }
    }

    #[test]
    fn the_first_add_on_creates_the_subscription() {
        let writes = plan(&desired(&[("price_10", &["q1"])]), None);
        assert_eq!(
            writes,
            vec![StripeWrite::CreateSubscription {
                items: vec![ItemSpec { price: "price_10".into(), quantity: 1, queues: "q1".into() }]
            }]
        );
    }

    #[test]
    fn a_second_queue_on_the_same_add_on_raises_the_quantity() {
        let current = sub(vec![item("si_1", "price_10", &["q1"])]);
        let writes = plan(&desired(&[("price_10", &["q1", "q2"])]), Some(&current));
        assert_eq!(
            writes,
            vec![StripeWrite::UpdateItem { item_id: "si_1".into(), quantity: 2, queues: "q1,q2".into() }]
        );
    }

    #[test]
    fn a_switch_of_add_on_adds_the_new_item_before_deleting_the_old() {
        let current = sub(vec![item("si_1", "price_10", &["q1"])]);
        let writes = plan(&desired(&[("price_50", &["q1"])]), Some(&current));
        assert_eq!(
            writes,
            vec![
                StripeWrite::CreateItem {
                    subscription_id: "sub_1".into(),
                    item: ItemSpec { price: "price_50".into(), quantity: 1, queues: "q1".into() }
                },
                StripeWrite::DeleteItem { item_id: "si_1".into() },
            ]
        );
    }

    #[test]
    fn removing_the_last_add_on_cancels_the_subscription() {
        let current = sub(vec![item("si_1", "price_10", &["q1"])]);
        assert_eq!(
            plan(&Desired::new(), Some(&current)),
            vec![StripeWrite::CancelSubscription { subscription_id: "sub_1".into() }]
        );
        assert_eq!(plan(&Desired::new(), None), vec![]);
    }

    #[test]
    fn nothing_to_do_when_stripe_already_agrees() {
        let current = sub(vec![item("si_1", "price_10", &["q1", "q2"]), item("si_2", "price_50", &["q3"])]);
        let want = desired(&[("price_10", &["q1", "q2"]), ("price_50", &["q3"])]);
        assert_eq!(plan(&want, Some(&current)), vec![]);
    }
}
