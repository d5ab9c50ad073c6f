//! When a job fires: a 5-field cron expression (names, ranges, lists, steps) or `@hourly`,
//! `@daily`, `@weekly`, `@monthly`, `@yearly`, parsed by `croner`, in an IANA time zone
//! (`jiff`, from the system's zoneinfo). Daylight-saving follows cron's usual rules, as
//! croner implements them: a time skipped by a spring-forward gap runs once, right after the
//! gap; a time repeated by a fall-back runs once, at its first occurrence; an interval job
//! (`*/30 * * * *`) keeps its interval in real time through the repeated hour.

use std::str::FromStr;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

use super::error::CronError;

/// The names of the five fields, in order.
const FIELDS: [&str; 5] = ["minute", "hour", "day of month", "month", "day of week"];

/// A parsed schedule in its zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    cron: Cron,
    zone: TimeZone,
    /// The expression as given.
    pub expr: String,
    /// The zone's IANA name (`None`: the system's).
    pub zone_name: Option<String>,
}

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
}

impl Schedule {
    /// Parses `expr` in `zone` (an IANA name; `None` = the system's zone). The error says
    /// which field is wrong, or which zone is unknown.
    pub fn parse(expr: &str, zone: Option<&str>) -> Result<Schedule, CronError> {
        let expr = expr.trim();
        let cron = parse_cron(expr)?;
        let tz = match zone {
            None => TimeZone::system(),
            Some(name) => TimeZone::get(name).map_err(|reason| CronError::UnknownZone {
                name: name.to_string(),
                reason,
            })?,
        };
        Ok(Schedule {
            cron,
            zone: tz,
            expr: expr.to_string(),
            zone_name: zone.map(str::to_string),
        })
    }

    /// The first fire time strictly after `after`.
    pub fn next_after(&self, after: Timestamp) -> Option<Timestamp> {
        let start: Zoned = after.to_zoned(self.zone.clone());
        self.cron
            .find_next_occurrence(&start, false)
            .ok()
            .map(|z| z.timestamp())
    }

    /// The last fire time at or before `at`.
    pub fn latest_at_or_before(&self, at: Timestamp) -> Option<Timestamp> {
        let start: Zoned = at.to_zoned(self.zone.clone());
        self.cron
            .find_previous_occurrence(&start, true)
            .ok()
            .map(|z| z.timestamp())
    }

    /// The next `count` fire times after `after`, in the schedule's zone.
    pub fn upcoming(&self, after: Timestamp, count: usize) -> Vec<Zoned> {
        let mut out = Vec::with_capacity(count);
        let mut at = after;
        while out.len() < count {
            let Some(next) = self.next_after(at) else {
                break;
            };
            out.push(next.to_zoned(self.zone.clone()));
            at = next;
        }
        out
    }

    /// The next fire time after `after` as people read it (`2027-01-04 08:00 CET`), or
    /// `never`.
    pub fn next_text(&self, after: Timestamp) -> String {
        self.upcoming(after, 1)
            .first()
            .map(|z| z.strftime("%Y-%m-%d %H:%M %Z").to_string())
            .unwrap_or_else(|| "never".into())
    }

    /// The zone as people read it: its IANA name, or the system's.
    pub fn zone_label(&self) -> String {
        self.zone
            .iana_name()
            .map(str::to_string)
            .or_else(|| self.zone_name.clone())
            .unwrap_or_else(|| "system".into())
    }
}

/// Parses a whole expression; on failure finds the first field that fails on its own.
fn parse_cron(expr: &str) -> Result<Cron, CronError> {
    let parser = parser();
    if expr.starts_with('@') {
        return parser.parse(expr).map_err(|reason| CronError::NotAnAlias {
            expr: expr.to_string(),
            reason,
        });
    }
    let fields: Vec<&str> = expr.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(CronError::FieldCount {
            expr: expr.to_string(),
            count: fields.len(),
        });
    }
    match parser.parse(expr) {
        Ok(cron) => Ok(cron),
        Err(whole) => {
            for (i, field) in fields.iter().enumerate() {
                let mut alone = ["*"; 5];
                alone[i] = field;
                if let Err(reason) = parser.parse(&alone.join(" ")) {
                    return Err(CronError::Field {
                        index: i + 1,
                        name: FIELDS[i],
                        field: field.to_string(),
                        reason,
                    });
                }
            }
            Err(CronError::Invalid {
                expr: expr.to_string(),
                reason: whole,
            })
        }
    }
}

impl FromStr for Schedule {
    type Err = CronError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Schedule::parse(s, None)
    }
}

#[cfg(test)]
mod tests;
