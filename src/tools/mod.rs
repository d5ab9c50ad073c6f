pub mod danger;
