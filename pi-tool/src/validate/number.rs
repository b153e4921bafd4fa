//! Numeric strings (`"7"`, `"2.5"`, `"1e3"`) as JSON numbers, exactly or not at all.
//!
//! Going through `f64` would change values silently (`"5.0000000000000001"` to `5`,
//! `"9007199254740993.0"` to `9007199254740992`, `"1e-400"` to `0`): the decimal is read
//! digit by digit instead, and an integer is built only from an integral decimal. A float is
//! the nearest `f64`, as the same digits sent as a JSON number would be (rounded past its 17
//! significant digits), but never 0 for a value that is not.

use serde_json::{Number, Value};

/// A decimal reduced to `±digits × 10^exponent`, with no leading or trailing zeros in `digits`
/// (zero has no digits).
#[derive(PartialEq, Eq, Debug)]
struct Decimal<'a> {
    negative: bool,
    digits: Vec<&'a [u8]>,
    exponent: i64,
}

impl Decimal<'_> {
    fn is_zero(&self) -> bool {
        self.digits.iter().all(|part| part.is_empty())
    }

    fn digit_count(&self) -> usize {
        self.digits.iter().map(|part| part.len()).sum()
    }

    fn digit_bytes(&self) -> impl Iterator<Item = u8> + '_ {
        self.digits.iter().flat_map(|part| part.iter().copied())
    }
}

/// Longest exponent read: anything larger is far outside every number type.
const MAX_EXPONENT_DIGITS: usize = 6;

/// Reads `[+-]digits[.digits][(e|E)[+-]digits]` (at least one mantissa digit).
fn parse_decimal(text: &str) -> Option<Decimal<'_>> {
    let bytes = text.as_bytes();
    let (negative, rest) = match bytes.first()? {
        b'-' => (true, &bytes[1..]),
        b'+' => (false, &bytes[1..]),
        _ => (false, bytes),
    };
    let int_len = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    let (int_part, rest) = rest.split_at(int_len);
    let (frac_part, rest) = match rest.split_first() {
        Some((b'.', after)) => {
            let frac_len = after.iter().take_while(|b| b.is_ascii_digit()).count();
            after.split_at(frac_len)
        }
        _ => (&[][..], rest),
    };
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let written_exponent: i64 = match rest.split_first() {
        None => 0,
        Some((b'e' | b'E', after)) => {
            let (sign, digits) = match after.split_first()? {
                (b'-', digits) => (-1, digits),
                (b'+', digits) => (1, digits),
                _ => (1, after),
            };
            if digits.is_empty()
                || !digits.iter().all(u8::is_ascii_digit)
                || digits.len() > MAX_EXPONENT_DIGITS
            {
                return None;
            }
            sign * std::str::from_utf8(digits).ok()?.parse::<i64>().ok()?
        }
        Some(_) => return None,
    };
    // Leading zeros of the integer part and trailing zeros of the fraction say nothing.
    let int_part = &int_part[int_part.iter().take_while(|&&b| b == b'0').count()..];
    let frac_trimmed = frac_part.len() - frac_part.iter().rev().take_while(|&&b| b == b'0').count();
    let frac_part = &frac_part[..frac_trimmed];
    let mut exponent = written_exponent - frac_part.len() as i64;
    let mut digits: Vec<&[u8]> = vec![int_part, frac_part];
    if int_part.is_empty() {
        // All digits are in the fraction: drop its leading zeros.
        let zeros = frac_part.iter().take_while(|&&b| b == b'0').count();
        digits = vec![&frac_part[zeros..]];
    } else if frac_part.is_empty() {
        // All digits are in the integer part: move its trailing zeros into the exponent.
        let zeros = int_part.iter().rev().take_while(|&&b| b == b'0').count();
        digits = vec![&int_part[..int_part.len() - zeros]];
        exponent += zeros as i64;
    }
    Some(Decimal {
        negative,
        digits,
        exponent,
    })
}

/// A numeric string as a JSON number: an integer when the value is integral and fits
/// `i64`/`u64` (exactly), else (when `allow_float`) the nearest finite, non-zero `f64` (zero for
/// zero). `None` when neither exists: the string is then left for validation to refuse.
pub(crate) fn parse_exact(text: &str, allow_float: bool) -> Option<Value> {
    let decimal = parse_decimal(text)?;
    if let Some(integer) = exact_integer(&decimal) {
        return Some(Value::Number(integer));
    }
    if !allow_float {
        return None;
    }
    // A float holds about 17 significant digits: more are rounded to the nearest `f64`, as
    // serde_json rounds the same digits sent as a JSON number (so a string and a literal of
    // one number mean the same). Read by serde_json itself where the text is JSON's syntax.
    let float: f64 = serde_json::from_str(text)
        .ok()
        .or_else(|| text.parse().ok())
        .filter(|f: &f64| f.is_finite())?;
    // No `f64` comes near a value that would become 0 (`1e-400`): refused, never 0.
    if float == 0.0 && !decimal.is_zero() {
        return None;
    }
    Number::from_f64(float).map(Value::Number)
}

/// The decimal as an `i64`/`u64`, if it is integral and fits.
fn exact_integer(decimal: &Decimal<'_>) -> Option<Number> {
    if decimal.is_zero() {
        return Some(Number::from(0u64));
    }
    if decimal.exponent < 0 {
        return None;
    }
    // u64::MAX has 20 digits: longer is out of range (and never allocated).
    let length = decimal.digit_count() as i64 + decimal.exponent;
    if length > 20 {
        return None;
    }
    let mut magnitude: u64 = 0;
    let zeros = std::iter::repeat_n(b'0', decimal.exponent as usize);
    for byte in decimal.digit_bytes().chain(zeros) {
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(byte - b'0'))?;
    }
    if !decimal.negative {
        return Some(Number::from(magnitude));
    }
    let negative = 0i64.checked_sub_unsigned(magnitude)?;
    Some(Number::from(negative))
}

#[cfg(test)]
mod tests {
    use super::parse_exact;
    use serde_json::json;

    #[test]
    fn integers_are_built_digit_by_digit() {
        assert_eq!(parse_exact("7", false), Some(json!(7)));
        assert_eq!(parse_exact("-3", false), Some(json!(-3)));
        assert_eq!(parse_exact("1e3", false), Some(json!(1000)));
        assert_eq!(parse_exact("5.000", false), Some(json!(5)));
        assert_eq!(parse_exact("0.5e1", false), Some(json!(5)));
        assert_eq!(
            parse_exact("9007199254740993.0", false),
            Some(json!(9_007_199_254_740_993u64))
        );
        assert_eq!(
            parse_exact("18446744073709551615", false),
            Some(json!(u64::MAX))
        );
        assert_eq!(
            parse_exact("-9223372036854775808", false),
            Some(json!(i64::MIN))
        );
        assert_eq!(parse_exact("-0", false), Some(json!(0)));
    }

    #[test]
    fn what_is_not_exactly_an_integer_is_refused() {
        assert_eq!(parse_exact("5.0000000000000001", false), None);
        assert_eq!(parse_exact("5.5", false), None);
        assert_eq!(parse_exact("18446744073709551616", false), None);
        assert_eq!(parse_exact("-9223372036854775809", false), None);
        assert_eq!(parse_exact("1e400", false), None);
        assert_eq!(parse_exact("1e999999999999", false), None);
    }

    #[test]
    fn floats_are_accepted_only_when_exact() {
        assert_eq!(parse_exact("2.5", true), Some(json!(2.5)));
        assert_eq!(parse_exact("0.1", true), Some(json!(0.1)));
        assert_eq!(parse_exact("-1.25e-3", true), Some(json!(-0.00125)));
        assert_eq!(
            parse_exact("0.30000000000000004", true),
            Some(json!(0.30000000000000004))
        );
        assert_eq!(parse_exact("1e-400", true), None);
        assert_eq!(parse_exact("1e400", true), None);
    }

    #[test]
    fn a_float_with_more_digits_than_an_f64_holds_is_rounded_as_a_json_number_is() {
        for text in [
            "3.14159265358979323846",
            "5.0000000000000001",
            "0.1000000000000000055511151231257827",
            "-2.718281828459045235360287",
            "1.7976931348623157e308",
            "4.9406564584124654e-324",
        ] {
            let literal: serde_json::Value = serde_json::from_str(text).expect("a JSON number");
            assert_eq!(parse_exact(text, true), Some(literal), "{text}");
        }
        // Outside JSON's syntax, the nearest f64 all the same.
        assert_eq!(
            parse_exact("+3.14159265358979323846", true),
            Some(json!(std::f64::consts::PI))
        );
    }

    #[test]
    fn only_decimal_syntax_is_read() {
        for text in [
            "", "-", ".", "e5", "1e", "1e+", "inf", "NaN", "0x10", "1_000", "1.2.3", "١",
        ] {
            assert_eq!(parse_exact(text, true), None, "{text:?}");
        }
        assert_eq!(parse_exact(".5", true), Some(json!(0.5)));
        assert_eq!(parse_exact("+5", false), Some(json!(5)));
    }
}
