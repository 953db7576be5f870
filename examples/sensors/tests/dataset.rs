//! The generated dataset: reproducible from its seed, in the observatory's schema, with values
//! that make sense for their variables.

use std::collections::{BTreeMap, BTreeSet};

use sensors::dataset::{
    self, COLUMNS, Reading, SENSORS, START, TEMPERATURE, generate, parse_csv_line, read_csv,
    to_csv_line, variable, write_csv,
};

fn csv_bytes(readings: &[Reading]) -> Vec<u8> {
    let mut bytes = Vec::new();
    write_csv(readings, &mut bytes).unwrap();
    bytes
}

#[test]
fn the_same_seed_gives_the_same_bytes_and_another_seed_others() {
    let a = csv_bytes(&generate(5_000, 7));
    assert_eq!(a, csv_bytes(&generate(5_000, 7)));
    assert_ne!(a, csv_bytes(&generate(5_000, 8)));
    // A shorter dataset is the start of a longer one.
    let short = generate(1_000, 7);
    assert_eq!(short[..], generate(5_000, 7)[..1_000]);
}

#[test]
fn the_csv_has_the_observatory_columns_in_order_and_reads_back() {
    let readings = generate(3_000, 1);
    let bytes = csv_bytes(&readings);
    let text = String::from_utf8(bytes.clone()).unwrap();
    let header = text.lines().next().unwrap();
    assert_eq!(
        header,
        "Sensor Name,Variable,Units,Timestamp,Value,Flagged as Suspect Reading,\
         Ground Height Above Sea Level,Sensor Height Above Ground,Sensor Centroid Longitude,\
         Sensor Centroid Latitude,Raw ID"
    );
    assert_eq!(header.split(',').collect::<Vec<_>>(), COLUMNS);
    assert_eq!(text.lines().count(), 3_001);
    assert_eq!(read_csv(bytes.as_slice()).unwrap(), readings);
    for (line, reading) in text.lines().skip(1).zip(&readings) {
        assert_eq!(to_csv_line(reading), format!("{line}\n"));
        assert_eq!(&parse_csv_line(line).unwrap(), reading);
        assert_eq!(line.split(',').count(), COLUMNS.len(), "{line}");
    }
    let flag = text.lines().nth(1).unwrap().split(',').nth(5).unwrap();
    assert!(flag == "False" || flag == "True", "{flag}");
}

#[test]
fn other_columns_and_broken_records_are_refused() {
    let swapped = "Variable,Sensor Name,Units,Timestamp,Value,Flagged as Suspect Reading,\
                   Ground Height Above Sea Level,Sensor Height Above Ground,\
                   Sensor Centroid Longitude,Sensor Centroid Latitude,Raw ID\n";
    let error = read_csv(swapped.as_bytes()).unwrap_err().to_string();
    assert!(
        error.starts_with("the columns are not the observatory's"),
        "{error}"
    );
    let line = to_csv_line(&generate(1, 1)[0]);
    let error = parse_csv_line(&line.replace("False", "maybe"))
        .unwrap_err()
        .to_string();
    assert!(error.contains("`True` or `False`"), "{error}");
    let error = parse_csv_line(&format!("{line}{line}"))
        .unwrap_err()
        .to_string();
    assert_eq!(error, "more than one csv record");
    assert_eq!(parse_csv_line("").unwrap_err().to_string(), "no csv record");
}

#[test]
fn sensors_report_every_minute_within_their_variables_ranges() {
    let readings = generate(dataset::DEFAULT_ROWS, dataset::DEFAULT_SEED);
    assert_eq!(readings.len(), dataset::DEFAULT_ROWS);
    assert_eq!(readings[0].timestamp, START);

    let sensors: BTreeSet<&str> = readings.iter().map(|r| r.sensor_name.as_str()).collect();
    assert_eq!(sensors.len(), SENSORS);
    for name in &sensors {
        let digits = name.strip_prefix("PER_AIRMON_MESH").expect(name);
        assert!(
            digits.len() == 7 && digits.bytes().all(|b| b.is_ascii_digit()),
            "{name}"
        );
    }

    // Per sensor and variable: one reading a minute, in order; fixed place and units.
    let mut series: BTreeMap<(&str, &str), Vec<&Reading>> = BTreeMap::new();
    for reading in &readings {
        let spec = variable(&reading.variable).expect("a known variable");
        assert_eq!(reading.units, spec.units, "{reading:?}");
        let hundredths = (reading.value * 100.0).round() as i64;
        assert_eq!(hundredths as f64 / 100.0, reading.value, "whole hundredths");
        assert!((spec.min..=spec.max).contains(&hundredths), "{reading:?}");
        assert!((-1.7..=-1.55).contains(&reading.longitude), "{reading:?}");
        assert!((54.95..=55.02).contains(&reading.latitude), "{reading:?}");
        series
            .entry((&reading.sensor_name, &reading.variable))
            .or_default()
            .push(reading);
    }
    for ((sensor, variable), rows) in &series {
        let expected: Vec<String> = (0..rows.len() as u64).map(dataset::timestamp).collect();
        let found: Vec<&str> = rows.iter().map(|r| r.timestamp.as_str()).collect();
        assert_eq!(found, expected, "{sensor} {variable}: one reading a minute");
        assert!(rows.windows(2).all(|w| w[0].latitude == w[1].latitude
            && w[0].ground_height_above_sea_level == w[1].ground_height_above_sea_level));
    }
    // Every sensor measures temperature; raw ids are unique and increasing.
    for name in &sensors {
        assert!(series.contains_key(&(name, TEMPERATURE)), "{name}");
    }
    assert!(readings.windows(2).all(|w| w[1].raw_id == w[0].raw_id + 1));
    let temperatures = readings
        .iter()
        .filter(|r| r.variable == TEMPERATURE)
        .count();
    assert!(
        (readings.len() / 7..readings.len() / 3).contains(&temperatures),
        "{temperatures} temperatures"
    );
    let suspect = readings.iter().filter(|r| r.flagged_as_suspect).count();
    assert!(
        (1..readings.len() / 100).contains(&suspect),
        "{suspect} suspect"
    );
}
