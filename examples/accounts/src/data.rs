//! The service's data, generated once at start-up like the original's faker CSVs: two accounts
//! with 1,001 and 10,001 transactions, ids counting down from 1,000,000 and 2,000,000. Seeded, so
//! every run and every platform serves the same bytes.

use crate::model::{Account, AccountList, Transaction, TransactionType};

const FIRST_NAMES: &[&str] = &[
    "Anna",
    "Jan",
    "Maria",
    "Piotr",
    "Katarzyna",
    "Tomasz",
    "Ewa",
    "Michał",
    "Agnieszka",
    "Paweł",
];
const LAST_NAMES: &[&str] = &[
    "Nowak",
    "Kowalski",
    "Wiśniewska",
    "Wójcik",
    "Kowalczyk",
    "Kamińska",
    "Lewandowski",
    "Zieliński",
];
const STREETS: &[&str] = &[
    "Marszałkowska",
    "Długa",
    "Piękna",
    "Ogrodowa",
    "Polna",
    "Leśna",
    "Słoneczna",
    "Krótka",
];
const CITIES: &[&str] = &[
    "Warszawa", "Kraków", "Wrocław", "Poznań", "Gdańsk", "Szczecin", "Lublin", "Katowice",
];
const DETAILS: &[&str] = &[
    "Payment for invoice",
    "Monthly rent transfer",
    "Grocery shopping at the market",
    "Salary for the previous month",
    "Refund of the overpaid amount",
    "Subscription renewal for another year",
    "Transfer between own accounts",
    "Utility bill for electricity and water",
];

/// xorshift64*: small, fast and reproducible.
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }

    fn person(&mut self) -> String {
        format!("{} {}", self.pick(FIRST_NAMES), self.pick(LAST_NAMES))
    }

    fn date(&mut self) -> String {
        format!(
            "2017-{:02}-{:02}T{:02}:{:02}:00Z",
            1 + self.below(12),
            1 + self.below(28),
            self.below(24),
            self.below(60)
        )
    }

    fn iban(&mut self) -> String {
        let mut iban = format!("PL{:02}", self.below(100));
        for _ in 0..6 {
            iban.push_str(&format!(" {:04}", self.below(10_000)));
        }
        iban
    }

    fn amount(&mut self) -> f64 {
        (self.below(5_000_000) as f64) / 100.0
    }
}

fn transactions(random: &mut Random, count: u64, first_id: u64) -> Vec<Transaction> {
    (0..count)
        .map(|i| {
            let kind = if random.below(2) == 0 {
                TransactionType::Credit
            } else {
                TransactionType::Debit
            };
            Transaction {
                id: first_id - i,
                transaction_type: kind as i32,
                transaction_date: random.date(),
                booking_date: random.date(),
                principal_disposal: random.person(),
                ordering_customer: random.person(),
                beneficiary: random.person(),
                beneficiary_account: random.iban(),
                details: format!("{} no. {}", random.pick(DETAILS), random.below(100_000)),
                amount: random.amount(),
            }
        })
        .collect()
}

fn account(
    random: &mut Random,
    id: u64,
    name: &str,
    transaction_count: u64,
    first_transaction: u64,
) -> Account {
    let balance = random.amount();
    Account {
        id,
        name: name.to_owned(),
        balance,
        available_funds: balance - random.amount() / 10.0,
        iban: random.iban(),
        currency: "PLN".to_owned(),
        owner: random.person(),
        owner_address: format!(
            "ul. {} {}, {}",
            random.pick(STREETS),
            1 + random.below(200),
            random.pick(CITIES)
        ),
        transactions: transactions(random, transaction_count, first_transaction),
    }
}

/// The two accounts of the original service.
pub fn accounts() -> AccountList {
    let mut random = Random(0x5DEE_CE66_D1CE_F00D);
    AccountList {
        accounts: vec![
            account(&mut random, 1, "Personal account", 1_001, 1_000_000),
            account(&mut random, 2, "Business account", 10_001, 2_000_000),
        ],
    }
}
