//! The thin acting step: every call to Stripe, through async-stripe's client pointed at
//! `AQS_STRIPE_API_BASE`. Decisions live in `plan`; this file only translates them to requests
//! and Stripe's answers back to our types. Every call is bounded by a timeout so a hung Stripe
//! cannot hold a team's sync lock for long.

use super::plan::{Current, CurrentItem, ItemSpec, StripeWrite};
use crate::teams::TeamId;
use anyhow::{Context, anyhow};
use std::collections::HashMap;
use std::future::Future;
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;
use stripe::{
    BillingPortalSession, CheckoutSession, CheckoutSessionMode, Client, CreateBillingPortalSession,
    CreateCheckoutSession, CreateCustomer, CreateSubscription, CreateSubscriptionItem, CreateSubscriptionItems,
    Currency, Customer, CustomerId, ListPaymentMethods, ListSubscriptions, PaymentMethod, PaymentMethodTypeFilter,
    Price, PriceId, RequestStrategy, Subscription, SubscriptionId, SubscriptionItem, SubscriptionItemId,
    UpdateSubscriptionItem,
};

const TIMEOUT: Duration = Duration::from_secs(20);

pub struct StripeApi {
    client: Client,
    /// Price id → unit amount in cents, read once.
    prices: Mutex<HashMap<String, u64>>,
}

async fn bounded<T, E: std::error::Error + Send + Sync + 'static>(
    what: &str,
    call: impl Future<Output = Result<T, E>>,
) -> anyhow::Result<T> {
    match tokio::time::timeout(TIMEOUT, call).await {
        Ok(result) => result.with_context(|| format!("stripe: {what}")),
        Err(_) => Err(anyhow!("stripe: {what}: no answer within {}s", TIMEOUT.as_secs())),
    }
}

fn metadata(queues: &str) -> HashMap<String, String> {
    HashMap::from([("queues".to_owned(), queues.to_owned())])
}

impl StripeApi {
    pub fn new(base: &str, secret_key: &str) -> Self {
        Self { client: Client::from_url(base, secret_key), prices: Mutex::default() }
    }

    fn idempotent(&self, key: &str) -> Client {
        self.client.clone().with_strategy(RequestStrategy::Idempotent(key.to_owned()))
    }

    /// One customer per team: the idempotency key names the team.
    pub async fn create_customer(&self, team: TeamId, email: &str) -> anyhow::Result<String> {
        let client = self.idempotent(&format!("aqs-customer-{}", team.as_uuid().simple()));
        let params = CreateCustomer {
            email: Some(email),
            metadata: Some(HashMap::from([("team_id".to_owned(), team.as_uuid().to_string())])),
            ..Default::default()
        };
        Ok(bounded("create customer", Customer::create(&client, params)).await?.id.to_string())
    }

    /// A Checkout session in setup mode; its URL.
    pub async fn setup_session(&self, customer: &str, success_url: &str, cancel_url: &str) -> anyhow::Result<String> {
        let mut params = CreateCheckoutSession::new();
        params.mode = Some(CheckoutSessionMode::Setup);
        params.customer = Some(CustomerId::from_str(customer)?);
        params.currency = Some(Currency::USD);
        params.success_url = Some(success_url);
        params.cancel_url = Some(cancel_url);
        let session = bounded("create checkout session", CheckoutSession::create(&self.client, params)).await?;
        session.url.context("stripe: the checkout session has no url")
    }

    pub async fn portal_session(&self, customer: &str, return_url: &str) -> anyhow::Result<String> {
        let mut params = CreateBillingPortalSession::new(CustomerId::from_str(customer)?);
        params.return_url = Some(return_url);
        Ok(bounded("create portal session", BillingPortalSession::create(&self.client, params)).await?.url)
    }

    /// The customer's card, as Stripe has it now.
    pub async fn card(&self, customer: &str) -> anyhow::Result<Option<CardOnFile>> {
        let mut params = ListPaymentMethods::new();
        params.customer = Some(CustomerId::from_str(customer)?);
        params.type_ = Some(PaymentMethodTypeFilter::Card);
        let list = bounded("list payment methods", PaymentMethod::list(&self.client, &params)).await?;
        Ok(list.data.into_iter().find_map(|pm| {
            pm.card.map(|card| CardOnFile { id: pm.id.to_string(), brand: card.brand, last4: card.last4 })
        }))
    }

    /// The customer's subscription that is not cancelled, if any.
    pub async fn live_subscription(&self, customer: &str) -> anyhow::Result<Option<Current>> {
        let mut params = ListSubscriptions::new();
        params.customer = Some(CustomerId::from_str(customer)?);
        let list = bounded("list subscriptions", Subscription::list(&self.client, &params)).await?;
        Ok(list.data.into_iter().next().map(current))
    }

    /// Sends one write with `key`; answers the subscription's id and status when the write
    /// changed them.
    pub async fn apply(
        &self,
        write: &StripeWrite,
        customer: &str,
        payment_method: Option<&str>,
        key: &str,
    ) -> anyhow::Result<Option<(String, String)>> {
        let client = self.idempotent(key);
        match write {
            StripeWrite::CreateSubscription { items } => {
                let mut params = CreateSubscription::new(CustomerId::from_str(customer)?);
                params.items = Some(items.iter().map(subscription_item).collect());
                params.default_payment_method = payment_method;
                let sub = bounded("create subscription", Subscription::create(&client, params)).await?;
                Ok(Some((sub.id.to_string(), sub.status.to_string())))
            }
            StripeWrite::CreateItem { subscription_id, item } => {
                let mut params = CreateSubscriptionItem::new(SubscriptionId::from_str(subscription_id)?);
                params.price = Some(PriceId::from_str(&item.price)?);
                params.quantity = Some(item.quantity);
                params.metadata = Some(metadata(&item.queues));
                bounded("create subscription item", SubscriptionItem::create(&client, params)).await?;
                Ok(None)
            }
            StripeWrite::UpdateItem { item_id, quantity, queues } => {
                let params = UpdateSubscriptionItem {
                    quantity: Some(*quantity),
                    metadata: Some(metadata(queues)),
                    ..Default::default()
                };
                let id = SubscriptionItemId::from_str(item_id)?;
                bounded("update subscription item", SubscriptionItem::update(&client, &id, params)).await?;
                Ok(None)
            }
            StripeWrite::DeleteItem { item_id } => {
                let id = SubscriptionItemId::from_str(item_id)?;
                bounded("delete subscription item", SubscriptionItem::delete(&client, &id)).await?;
                Ok(None)
            }
            StripeWrite::CancelSubscription { subscription_id } => {
                let id = SubscriptionId::from_str(subscription_id)?;
                let sub =
                    bounded("cancel subscription", Subscription::cancel(&client, &id, Default::default())).await?;
                Ok(Some((sub.id.to_string(), sub.status.to_string())))
            }
        }
    }

    /// The monthly price of an add-on in cents, read from Stripe once.
    pub async fn price_cents(&self, price: &str) -> anyhow::Result<u64> {
        if let Some(cents) = self.prices.lock().expect("price cache").get(price) {
            return Ok(*cents);
        }
        let found = bounded("retrieve price", Price::retrieve(&self.client, &PriceId::from_str(price)?, &[])).await?;
        let cents = found.unit_amount.context("stripe: the add-on price has no unit_amount")?.max(0) as u64;
        self.prices.lock().expect("price cache").insert(price.to_owned(), cents);
        Ok(cents)
    }
}

/// A payment method on file, with the id a subscription is charged to.
#[derive(Clone, Debug)]
pub struct CardOnFile {
    pub id: String,
    pub brand: String,
    pub last4: String,
}

fn subscription_item(item: &ItemSpec) -> CreateSubscriptionItems {
    CreateSubscriptionItems {
        price: Some(item.price.clone()),
        quantity: Some(item.quantity),
        metadata: Some(metadata(&item.queues)),
        ..Default::default()
    }
}

fn current(sub: Subscription) -> Current {
    Current {
        subscription_id: sub.id.to_string(),
        items: sub
            .items
            .data
            .into_iter()
            .map(|item| CurrentItem {
                id: item.id.to_string(),
                price: item.price.map(|p| p.id.to_string()).unwrap_or_default(),
                quantity: item.quantity.unwrap_or(0),
                queues: item.metadata.and_then(|m| m.get("queues").cloned()).unwrap_or_default(),
            })
            .collect(),
    }
}
