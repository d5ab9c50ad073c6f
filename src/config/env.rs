//! Parsing the words users write in `ODEK_*` variables. Which variable sets which key is a
//! column of the settings table; an invalid value is an error naming the variable, never
//! silently ignored.

/// Parses a boolean the way users write them: 1/0, true/false, yes/no, on/off (any case).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "t" | "true" | "yes" | "y" | "on" => Some(true),
        "0" | "f" | "false" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}
