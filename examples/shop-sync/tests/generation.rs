//! The seeded generator and what is built from it: xorshift128+ as the thesis defines it, the
//! catalogue, the mapping to SH, the partially synced starting state, and the statistics.
//!
//! Expected numbers come from an independent Python transcription of the formula
//! (`x = s0; y = s1; s0 = y; x ^= x << 23; s1 = x ^ y ^ (x >> 17) ^ (y >> 26); return s1 + y`,
//! ranges by Lemire's multiply-and-reject), not from this crate.

use std::time::Duration;

use shop_sync::generate::{self, catalogue};
use shop_sync::mapping;
use shop_sync::model::ModelAndStocks;
use shop_sync::prng::{DEFAULT_X_SEED, DEFAULT_Y_SEED, Xorshift128Plus};
use shop_sync::stats::{LatencyStats, nearest_rank};
use shop_sync::workload::{self, Plan, Workload};

#[test]
fn xorshift128plus_gives_the_formulas_numbers_for_the_default_seeds() {
    let mut random = Xorshift128Plus::new(DEFAULT_X_SEED, DEFAULT_Y_SEED);
    let first: Vec<u64> = (0..5).map(|_| random.next_u64()).collect();
    assert_eq!(
        first,
        [
            2_707_555_569_049_116_408,
            8_348_810_643_212_563_222,
            10_743_743_827_561_799_139,
            3_396_936_562_249_880_603,
            17_094_421_219_148_218_590,
        ]
    );
    assert_eq!(
        Xorshift128Plus::with_default_seeds(),
        Xorshift128Plus::new(DEFAULT_X_SEED, DEFAULT_Y_SEED)
    );
}

#[test]
fn all_zero_seeds_start_from_the_originals_fallback_state() {
    let mut random = Xorshift128Plus::new(0, 0);
    assert_eq!(
        [random.next_u64(), random.next_u64()],
        [8_388_544, 16_777_088]
    );
}

#[test]
fn ranges_stay_in_bounds_and_cover_them() {
    let mut random = Xorshift128Plus::new(1, 2);
    let mut seen = [0u32; 7];
    for _ in 0..7_000 {
        let value = random.between(3, 9);
        assert!((3..=9).contains(&value), "{value}");
        seen[(value - 3) as usize] += 1;
    }
    assert!(
        seen.iter().all(|n| (800..1_200).contains(n)),
        "uneven: {seen:?}"
    );
    let mut items = (0..50).collect::<Vec<u32>>();
    random.shuffle(&mut items);
    let mut sorted = items.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, (0..50).collect::<Vec<u32>>());
    assert_ne!(items, sorted, "a shuffle of 50 moves something");
}

#[test]
fn the_first_model_is_the_one_the_formula_draws() {
    let catalogue = catalogue(3, DEFAULT_X_SEED, DEFAULT_Y_SEED);
    let (code, items) = &catalogue.models[0];
    assert_eq!(code, "model0");
    // Python: 3 items; no colour, a size; 37360 cents at 19 % off; barcode 9064933; Hand.
    assert_eq!(items.len(), 3);
    let first = &items[0];
    assert_eq!(first.item_code_365, "Model0_0");
    assert_eq!(first.model_code_365, "model0");
    assert_eq!(
        first.item_name, "",
        "items of multi-item models take the model's name"
    );
    assert_eq!(first.price_incl_1, 373.60);
    assert_eq!(first.price_incl_3, 302.62, "19 % off, rounded to the cent");
    assert_eq!(first.list_item_barcodes[0].barcode, "9064933");
    assert_eq!(first.category_name, "Hand");
    assert_eq!(first.color_name, "");
    assert!(
        generate::SIZES.contains(&first.size_name.as_str()),
        "{}",
        first.size_name
    );
    assert_eq!(
        catalogue.stocks.len(),
        catalogue.models.iter().map(|(_, i)| i.len()).sum::<usize>()
    );
}

#[test]
fn generation_is_reproducible_and_depends_on_the_seeds() {
    let a = catalogue(200, DEFAULT_X_SEED, DEFAULT_Y_SEED);
    let b = catalogue(200, DEFAULT_X_SEED, DEFAULT_Y_SEED);
    assert_eq!(a, b);
    // The same seeds give the same bytes, as a process on another machine would serve them.
    assert_eq!(
        serde_json::to_string(&a.models).unwrap(),
        serde_json::to_string(&b.models).unwrap()
    );
    let other = catalogue(200, DEFAULT_X_SEED, DEFAULT_Y_SEED + 1);
    assert_ne!(a.models, other.models);
    // More models extend the catalogue: models are drawn first, stocks after all of them.
    let more = catalogue(201, DEFAULT_X_SEED, DEFAULT_Y_SEED);
    assert_eq!(a.models[..], more.models[..200]);

    for (code, items) in &a.models {
        assert!(
            (1..=20).contains(&items.len()),
            "{code}: {} items",
            items.len()
        );
        for item in items {
            assert!(
                (1.99..=2019.99).contains(&item.price_incl_1),
                "{}",
                item.price_incl_1
            );
            assert!(item.price_incl_3 <= item.price_incl_1);
            assert!(item.price_incl_3 >= (item.price_incl_1 * 0.8) - 0.01);
            let barcode: u64 = item.list_item_barcodes[0].barcode.parse().unwrap();
            assert!((1_111_111..=9_999_999).contains(&barcode));
            assert!(generate::CATEGORIES.contains(&item.category_name.as_str()));
        }
        // A model has an option for all its items or for none.
        let colors = items.iter().filter(|i| !i.color_name.is_empty()).count();
        assert!(colors == 0 || colors == items.len(), "{code}");
    }
    assert!(a.stocks.iter().all(|s| (0..=99_999).contains(&s.stock)));
}

#[test]
fn a_model_maps_to_the_product_the_syncer_writes() {
    let catalogue = catalogue(40, DEFAULT_X_SEED, DEFAULT_Y_SEED);
    let (_, items) = catalogue
        .models
        .iter()
        .find(|(_, items)| {
            items.len() > 1 && !items[0].color_name.is_empty() && !items[0].size_name.is_empty()
        })
        .expect("a model with colour and size among 40");
    let product = mapping::product(items);
    assert_eq!(product.handle, items[0].model_code_365);
    assert_eq!(product.title, items[0].model_name);
    assert_eq!(product.vendor, mapping::DEFAULT_VENDOR);
    assert_eq!(product.product_type, items[0].category_name);
    assert_eq!(product.body_html, "\n\n");
    let names: Vec<&str> = product.options.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["Color", "Size"]);
    assert_eq!(product.variants.len(), items.len());
    for (variant, item) in product.variants.iter().zip(items) {
        assert_eq!(variant.sku, item.item_code_365);
        assert_eq!(variant.option1.as_deref(), Some(item.color_name.as_str()));
        assert_eq!(variant.option2.as_deref(), Some(item.size_name.as_str()));
        assert_eq!(
            variant.title,
            format!("{} / {}", item.color_name, item.size_name)
        );
        assert_eq!(
            variant.barcode.as_deref(),
            Some(item.list_item_barcodes[0].barcode.as_str())
        );
        if item.price_incl_3 < item.price_incl_1 {
            assert_eq!(variant.price, format!("{:.2}", item.price_incl_3));
            assert_eq!(
                variant.compare_at_price,
                Some(format!("{:.2}", item.price_incl_1))
            );
        } else {
            assert_eq!(variant.price, format!("{:.2}", item.price_incl_1));
            assert_eq!(variant.compare_at_price, None);
        }
    }
    assert_eq!(mapping::listed_stock(-3), 0);
    assert_eq!(mapping::listed_stock(7), 7);

    let (_, plain) = catalogue
        .models
        .iter()
        .find(|(_, items)| items[0].color_name.is_empty() && items[0].size_name.is_empty())
        .expect("a model without options among 40");
    let product = mapping::product(plain);
    assert_eq!(product.options.len(), 1);
    assert_eq!(product.options[0].name, "Title");
    assert!(product.variants.iter().all(|v| v.title == "Default Title"));
}

#[test]
fn plans_respect_the_theses_bounds() {
    for models in [1usize, 2, 5, 40, 250, 1000] {
        for seed in 0..50u64 {
            let workload = Workload {
                models,
                x_seed: seed,
                y_seed: DEFAULT_Y_SEED,
            };
            let plan = workload.draw_plan(&mut workload.random());
            assert!(plan.partial <= models, "{plan:?}");
            assert!(plan.full < models, "{plan:?}");
            assert!(plan.partial + plan.full <= models, "{plan:?}");
        }
    }
}

#[test]
fn a_partially_synced_model_is_stale_but_keeps_a_variant() {
    let catalogue = catalogue(60, DEFAULT_X_SEED, DEFAULT_Y_SEED);
    let stocks: std::collections::HashMap<_, _> = catalogue
        .stocks
        .iter()
        .map(|s| (s.item_code_365.clone(), s.stock))
        .collect();
    let models: Vec<ModelAndStocks> = catalogue
        .models
        .iter()
        .map(|(_, items)| ModelAndStocks {
            model: items.clone(),
            stocks: items
                .iter()
                .map(|i| (i.item_code_365.clone(), stocks[&i.item_code_365]))
                .collect(),
        })
        .collect();
    let plan = Plan {
        partial: 40,
        full: 20,
    };
    let mut random = Xorshift128Plus::new(DEFAULT_X_SEED, DEFAULT_Y_SEED);
    let uploads = workload::uploads(&models, plan, &mut random);
    assert_eq!(uploads.len(), 60);
    let mut stale = 0;
    for (upload, model) in uploads.iter().zip(&models) {
        let wanted = mapping::product(&model.model);
        assert!(!upload.product.variants.is_empty());
        assert_eq!(upload.product.handle, wanted.handle);
        assert_eq!(upload.stocks.len(), upload.product.variants.len());
        if upload.product != wanted {
            stale += 1;
        }
    }
    // The partial ones differ (a 1-item model with no change drawn can equal its target); the
    // full ones never do.
    assert!(stale >= 30, "only {stale} of 40 partial products are stale");
    for (upload, model) in uploads[40..].iter().zip(&models[40..]) {
        assert_eq!(upload.product, mapping::product(&model.model));
        for (sku, stock) in &upload.stocks {
            assert_eq!(*stock, mapping::listed_stock(model.stocks[sku]));
        }
    }
    // The same seeds build the same starting state.
    let again = workload::uploads(
        &models,
        plan,
        &mut Xorshift128Plus::new(DEFAULT_X_SEED, DEFAULT_Y_SEED),
    );
    assert_eq!(uploads, again);
}

#[test]
fn latency_statistics_use_nearest_rank() {
    let latencies: Vec<Duration> = (1..=1000).map(Duration::from_millis).collect();
    let stats = LatencyStats::of(&latencies).unwrap();
    assert_eq!(stats.median, 500.5);
    assert_eq!(stats.mean, 500.5);
    assert_eq!(stats.p95, 950.0);
    assert_eq!(stats.p99, 990.0);
    assert_eq!(stats.p999, 999.0, "rank ⌈0.999 · 1000⌉ = 999");
    assert!((stats.std_dev - 288.6749).abs() < 1e-3, "{}", stats.std_dev);

    assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 999), 3.0);
    assert_eq!(nearest_rank(&[1.0, 2.0, 3.0], 500), 2.0);
    assert_eq!(nearest_rank(&[4.0], 950), 4.0);
    assert!(LatencyStats::of(&[]).is_none());
}
