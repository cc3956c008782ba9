defmodule ExZarr.FuzzTest do
  @moduledoc """
  The bounded run of the Elixir-level fuzzer (see fuzz/README.md): hostile metadata
  documents, chunks, codec configurations and API arguments, each case run through open,
  read, write and resize in a capped child BEAM. Fails on any raise from a non-bang
  function, bad return, wrong result, heap blow-up, hang or child death, printing the
  shrunk case of each kind of failure (saved to test/fuzz/corpus/ when new).

  The seed is ExUnit's (`mix test --seed N`) unless `EXZARR_FUZZ_SEED` is set; the run
  lasts `EXZARR_FUZZ_SECONDS` (default 45) plus the shrinking (at most 30 s, or a quarter
  of a longer run).
  """
  use ExUnit.Case, async: false

  alias ExZarr.Fuzz.Runner

  @moduletag :fuzz
  @moduletag timeout: :infinity

  test "hostile documents, chunks, codecs and arguments never crash, raise or hang" do
    seconds = env_int("EXZARR_FUZZ_SECONDS", 45)
    seed = env_int("EXZARR_FUZZ_SEED", ExUnit.configuration()[:seed])

    report =
      Runner.run(
        seed: seed,
        seconds: seconds,
        shrink_seconds: max(30, div(seconds, 4)),
        progress: progress(seconds)
      )

    IO.puts("\n" <> Runner.format(%{report | findings: []}))
    assert report.findings == [], Runner.format(report)
  end

  # A line every 100 cases on long runs (make fuzz).
  defp progress(seconds) when seconds > 120,
    do: fn %{index: i} -> if rem(i + 1, 100) == 0, do: IO.write("[fuzz: #{i + 1} cases] ") end

  defp progress(_seconds), do: nil

  defp env_int(name, default) do
    case System.get_env(name) do
      nil -> default
      text -> String.to_integer(text)
    end
  end
end
