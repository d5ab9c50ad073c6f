//! Schedules: recurring tasks (`odek schedule`, docs/SCHEDULES.md). Jobs and their state in
//! the odek home ([`store`]), when they fire ([`cron`]), and the one runner per home that
//! starts them ([`runner`]).

pub mod cron;
pub mod deliver;
pub mod exec;
pub mod runner;
pub mod store;
