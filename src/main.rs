fn main() -> std::process::ExitCode {
    odek::cli::main()
}
