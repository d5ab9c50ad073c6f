//! Tools the model can call, and the danger classification that gates them.

pub mod danger;
