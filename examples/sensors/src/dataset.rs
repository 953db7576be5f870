//! A generated month of Newcastle Urban Observatory readings, in the observatory's CSV schema.
//!
//! The observatory's exports have one reading per row under these columns, in this order
//! ([`COLUMNS`]):
//!
//! ```text
//! Sensor Name,Variable,Units,Timestamp,Value,Flagged as Suspect Reading,Ground Height Above Sea Level,Sensor Height Above Ground,Sensor Centroid Longitude,Sensor Centroid Latitude,Raw ID
//! PER_AIRMON_MESH1971150,Temperature,Celsius,2023-02-01 00:00:00,4.12,False,47.3,2.5,-1.612745,54.973812,12000000
//! ```
//!
//! [`generate`] makes such rows from a seed alone (splitmix64, no clock): several air-monitoring
//! sensors around Newcastle, each reporting Temperature, Humidity, NO2 and some of Pressure,
//! PM2.5 and PM10 every minute, with a daily temperature cycle and bounded random walks for the
//! rest. The same `(rows, seed)` gives the same bytes on every machine: values are whole
//! hundredths, so they print and parse back exactly.

use std::cell::RefCell;
use std::io::{self, Cursor, SeekFrom};

use serde::{Deserialize, Serialize};

/// The observatory's columns, in order.
pub const COLUMNS: [&str; 11] = [
    "Sensor Name",
    "Variable",
    "Units",
    "Timestamp",
    "Value",
    "Flagged as Suspect Reading",
    "Ground Height Above Sea Level",
    "Sensor Height Above Ground",
    "Sensor Centroid Longitude",
    "Sensor Centroid Latitude",
    "Raw ID",
];

/// Rows of the dataset unless told otherwise: the 50,000 of Dyninka's evaluation.
pub const DEFAULT_ROWS: usize = 50_000;
/// Seed of the dataset unless told otherwise.
pub const DEFAULT_SEED: u64 = 1;
/// Sensors in a generated dataset.
pub const SENSORS: usize = 8;
/// The variable the flow keeps.
pub const TEMPERATURE: &str = "Temperature";
/// The first reading's time: the start of a month, as in an observatory export.
pub const START: &str = "2023-02-01 00:00:00";
/// Days from 1970-01-01 to [`START`]'s date.
const START_DAY: i64 = 19_389;

/// One row: one sensor's reading of one variable at one minute.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reading {
    /// E.g. `PER_AIRMON_MESH1971150`.
    #[serde(rename = "Sensor Name")]
    pub sensor_name: String,
    /// What was measured: `Temperature`, `Humidity`, `NO2`…
    #[serde(rename = "Variable")]
    pub variable: String,
    /// The value's units: `Celsius`, `%`, `ugm -3`, `mb`.
    #[serde(rename = "Units")]
    pub units: String,
    /// `YYYY-MM-DD hh:mm:ss`, UTC.
    #[serde(rename = "Timestamp")]
    pub timestamp: String,
    /// The reading.
    #[serde(rename = "Value")]
    pub value: f64,
    /// The observatory's quality flag, written `True` or `False` as in its exports.
    #[serde(rename = "Flagged as Suspect Reading", with = "capitalized_bool")]
    pub flagged_as_suspect: bool,
    /// Metres.
    #[serde(rename = "Ground Height Above Sea Level")]
    pub ground_height_above_sea_level: f64,
    /// Metres.
    #[serde(rename = "Sensor Height Above Ground")]
    pub sensor_height_above_ground: f64,
    /// Degrees.
    #[serde(rename = "Sensor Centroid Longitude")]
    pub longitude: f64,
    /// Degrees.
    #[serde(rename = "Sensor Centroid Latitude")]
    pub latitude: f64,
    /// The observatory's id of the raw reading.
    #[serde(rename = "Raw ID")]
    pub raw_id: u64,
}

/// A variable the sensors report: its name, units and the range its values stay in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    /// As in the `Variable` column.
    pub name: &'static str,
    /// As in the `Units` column.
    pub units: &'static str,
    /// Lowest value, in hundredths.
    pub min: i64,
    /// Highest value, in hundredths.
    pub max: i64,
}

/// Every variable a generated sensor may report, Temperature first.
pub const VARIABLES: [Variable; 6] = [
    Variable {
        name: TEMPERATURE,
        units: "Celsius",
        min: -1_000,
        max: 3_000,
    },
    Variable {
        name: "Humidity",
        units: "%",
        min: 3_000,
        max: 10_000,
    },
    Variable {
        name: "NO2",
        units: "ugm -3",
        min: 0,
        max: 15_000,
    },
    Variable {
        name: "Pressure",
        units: "mb",
        min: 97_000,
        max: 104_000,
    },
    Variable {
        name: "PM2.5",
        units: "ugm -3",
        min: 0,
        max: 8_000,
    },
    Variable {
        name: "PM10",
        units: "ugm -3",
        min: 0,
        max: 12_000,
    },
];

/// The variable named `name`.
pub fn variable(name: &str) -> Option<&'static Variable> {
    VARIABLES.iter().find(|v| v.name == name)
}

/// splitmix64 (Steele, Lea, Flood): one 64-bit state, good enough for test data, the same
/// sequence everywhere.
#[derive(Debug, Clone)]
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `low..=high` (the modulo bias is irrelevant for test data).
    fn between(&mut self, low: i64, high: i64) -> i64 {
        let span = (high - low) as u64 + 1;
        low + (self.next_u64() % span) as i64
    }

    /// True once in `n` draws, on average.
    fn one_in(&mut self, n: u64) -> bool {
        self.next_u64() % n == 0
    }
}

/// A sensor of the generated network: where it is, what it reports, and its current values.
struct Sensor {
    name: String,
    ground_height: f64,
    height_above_ground: f64,
    longitude: f64,
    latitude: f64,
    /// Indexes into [`VARIABLES`], with the current value (hundredths) of each.
    series: Vec<(usize, i64)>,
    /// This sensor's offset from the city's temperature, in hundredths (shade, height…).
    temperature_offset: i64,
}

impl Sensor {
    fn generate(rng: &mut SplitMix64, taken: &[Sensor]) -> Self {
        // Names like the observatory's `PER_AIRMON_MESH1971150`, distinct within the network.
        let name = loop {
            let name = format!("PER_AIRMON_MESH{}", rng.between(1_900_000, 1_999_999));
            if taken.iter().all(|s| s.name != name) {
                break name;
            }
        };
        // Temperature, Humidity and NO2 always; each of the others on half of the sensors.
        let mut series = Vec::new();
        for (i, v) in VARIABLES.iter().enumerate() {
            if i < 3 || rng.one_in(2) {
                let middle = (v.min + v.max) / 2;
                let quarter = (v.max - v.min) / 4;
                series.push((i, rng.between(middle - quarter, middle + quarter)));
            }
        }
        Self {
            name,
            ground_height: rng.between(150, 1_200) as f64 / 10.0,
            height_above_ground: rng.between(20, 40) as f64 / 10.0,
            // Around Newcastle upon Tyne.
            longitude: rng.between(-1_700_000, -1_550_000) as f64 / 1_000_000.0,
            latitude: rng.between(54_950_000, 55_020_000) as f64 / 1_000_000.0,
            series,
            temperature_offset: rng.between(-100, 100),
        }
    }

    /// The next value of series `index` at `minute` since [`START`], in hundredths.
    fn step(&mut self, index: usize, minute: u64, rng: &mut SplitMix64) -> i64 {
        let (variable, value) = &mut self.series[index];
        let v = &VARIABLES[*variable];
        if v.name == TEMPERATURE {
            let noise = rng.between(-30, 30);
            *value =
                (daily_temperature(minute) + self.temperature_offset + noise).clamp(v.min, v.max);
        } else {
            // A bounded random walk: steps of up to 1/200 of the range, reflected at the bounds.
            let reach = ((v.max - v.min) / 200).max(1);
            let next = *value + rng.between(-reach, reach);
            *value = if next < v.min || next > v.max {
                *value - (next - *value)
            } else {
                next
            };
        }
        *value
    }
}

/// February in Newcastle, in hundredths of a degree: 2 °C at 05:00 rising linearly to 8 °C at
/// 15:00 and falling back (piecewise linear, so every machine computes the same integers).
fn daily_temperature(minute: u64) -> i64 {
    const LOW: i64 = 200;
    const HIGH: i64 = 800;
    const COLDEST: i64 = 5 * 60;
    const WARMEST: i64 = 15 * 60;
    const DAY: i64 = 24 * 60;
    let m = (minute % DAY as u64) as i64;
    let (from, to, span, into) = if (COLDEST..WARMEST).contains(&m) {
        (LOW, HIGH, WARMEST - COLDEST, m - COLDEST)
    } else {
        (
            HIGH,
            LOW,
            DAY - (WARMEST - COLDEST),
            (m - WARMEST).rem_euclid(DAY),
        )
    };
    from + (to - from) * into / span
}

/// `rows` readings from `seed`: minute after minute from [`START`], every sensor's variables in
/// turn, cut off after `rows`.
pub fn generate(rows: usize, seed: u64) -> Vec<Reading> {
    let mut rng = SplitMix64(seed);
    let mut sensors: Vec<Sensor> = Vec::with_capacity(SENSORS);
    for _ in 0..SENSORS {
        let sensor = Sensor::generate(&mut rng, &sensors);
        sensors.push(sensor);
    }
    let first_raw_id = rng.between(10_000_000, 20_000_000) as u64;
    let mut readings = Vec::with_capacity(rows);
    let mut minute = 0u64;
    'minutes: loop {
        let timestamp = timestamp(minute);
        for sensor in &mut sensors {
            for index in 0..sensor.series.len() {
                if readings.len() == rows {
                    break 'minutes;
                }
                let hundredths = sensor.step(index, minute, &mut rng);
                let variable = &VARIABLES[sensor.series[index].0];
                readings.push(Reading {
                    sensor_name: sensor.name.clone(),
                    variable: variable.name.to_owned(),
                    units: variable.units.to_owned(),
                    timestamp: timestamp.clone(),
                    value: hundredths as f64 / 100.0,
                    flagged_as_suspect: rng.one_in(500),
                    ground_height_above_sea_level: sensor.ground_height,
                    sensor_height_above_ground: sensor.height_above_ground,
                    longitude: sensor.longitude,
                    latitude: sensor.latitude,
                    raw_id: first_raw_id + readings.len() as u64,
                });
            }
        }
        minute += 1;
    }
    readings
}

/// `YYYY-MM-DD hh:mm:ss` of `minute` minutes after [`START`].
pub fn timestamp(minute: u64) -> String {
    let day = START_DAY + (minute / (24 * 60)) as i64;
    let (year, month, date) = civil_from_days(day);
    let in_day = minute % (24 * 60);
    format!(
        "{year:04}-{month:02}-{date:02} {:02}:{:02}:00",
        in_day / 60,
        in_day % 60
    )
}

/// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1_460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let date = (day_of_year - (153 * shifted_month + 2) / 5 + 1) as u32;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, date)
}

/// Writes `readings` as CSV with the header row.
pub fn write_csv<W: io::Write>(readings: &[Reading], out: W) -> csv::Result<()> {
    let mut writer = csv::Writer::from_writer(out);
    for reading in readings {
        writer.serialize(reading)?;
    }
    writer.flush()?;
    Ok(())
}

/// Reads CSV with the header row, checking that its columns are [`COLUMNS`] in order.
pub fn read_csv<R: io::Read>(input: R) -> Result<Vec<Reading>, SchemaError> {
    let mut reader = csv::Reader::from_reader(input);
    let header = reader.headers().map_err(SchemaError::Csv)?;
    if !header.iter().eq(COLUMNS) {
        return Err(SchemaError::Columns(
            header.iter().map(str::to_owned).collect(),
        ));
    }
    reader
        .deserialize()
        .collect::<csv::Result<_>>()
        .map_err(SchemaError::Csv)
}

/// One reading as one CSV record without a header, ending in `\n`: what the sensor service
/// answers.
pub fn to_csv_line(reading: &Reading) -> String {
    let mut writer = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::with_capacity(160));
    // Writing to memory cannot fail, and every field of a `Reading` is a plain value.
    writer
        .serialize(reading)
        .expect("a reading serializes as a record");
    let bytes = writer.into_inner().expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("the csv writer writes the utf-8 it is given")
}

/// Parses one header-less CSV record, its fields in [`COLUMNS`]' order.
pub fn parse_csv_line(line: &str) -> Result<Reading, SchemaError> {
    // One reader per thread, rewound for each line: building a reader builds its parser's
    // state machine and buffer, which cost more than parsing one short line.
    thread_local! {
        static LINE_READER: RefCell<csv::Reader<Cursor<Vec<u8>>>> = RefCell::new(
            csv::ReaderBuilder::new()
                .has_headers(false)
                // Each line stands alone: its field count is not compared with the last one's.
                .flexible(true)
                .from_reader(Cursor::new(Vec::new())),
        );
    }
    LINE_READER.with_borrow_mut(|reader| {
        let source = reader.get_mut().get_mut();
        source.clear();
        source.extend_from_slice(line.as_bytes());
        reader
            .seek_raw(SeekFrom::Start(0), csv::Position::new())
            .map_err(SchemaError::Csv)?;
        let mut records = reader.deserialize::<Reading>();
        let reading = records
            .next()
            .ok_or(SchemaError::Empty)?
            .map_err(SchemaError::Csv)?;
        if records.next().is_some() {
            return Err(SchemaError::MoreThanOne);
        }
        Ok(reading)
    })
}

/// CSV that is not in the observatory's schema.
#[derive(Debug)]
#[non_exhaustive]
pub enum SchemaError {
    /// The header names other columns, or the same in another order.
    Columns(Vec<String>),
    /// No record where one was expected.
    Empty,
    /// More than one record where one was expected.
    MoreThanOne,
    /// A record that does not parse.
    Csv(csv::Error),
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Columns(found) => write!(
                f,
                "the columns are not the observatory's: expected `{}`, found `{}`",
                COLUMNS.join(","),
                found.join(",")
            ),
            Self::Empty => f.write_str("no csv record"),
            Self::MoreThanOne => f.write_str("more than one csv record"),
            Self::Csv(error) => write!(f, "invalid csv record: {error}"),
        }
    }
}

impl std::error::Error for SchemaError {}

/// `True`/`False`, as the observatory's exports (written by Python) spell booleans; `true` and
/// `false` are read too.
mod capitalized_bool {
    use serde::{Deserialize, Deserializer, Serializer, de};

    pub(super) fn serialize<S: Serializer>(value: &bool, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(if *value { "True" } else { "False" })
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<bool, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        match &*text {
            "True" | "true" => Ok(true),
            "False" | "false" => Ok(false),
            other => Err(de::Error::invalid_value(
                de::Unexpected::Str(other),
                &"`True` or `False`",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_follow_the_calendar() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(START_DAY), (2023, 2, 1));
        assert_eq!(timestamp(0), START);
        assert_eq!(timestamp(27 * 24 * 60 + 61), "2023-02-28 01:01:00");
        assert_eq!(timestamp(28 * 24 * 60), "2023-03-01 00:00:00");
        assert_eq!(civil_from_days(19_782), (2024, 2, 29));
    }

    #[test]
    fn the_day_is_coldest_at_five_and_warmest_at_three() {
        let by_minute: Vec<i64> = (0..24 * 60).map(daily_temperature).collect();
        assert_eq!(by_minute[5 * 60], 200);
        assert_eq!(by_minute[15 * 60], 800);
        assert_eq!(by_minute.iter().min(), Some(&200));
        assert_eq!(by_minute.iter().max(), Some(&800));
        assert_eq!(daily_temperature(24 * 60), by_minute[0]);
    }
}
