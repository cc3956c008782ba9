defmodule ExZarr.Fuzz.Corpus do
  @moduledoc """
  The regression corpus: one file per kind of failure the fuzzer found
  (`test/fuzz/corpus/<kind>-<hash>.exs`, the hash being that of the failure's signature). A
  file is a comment saying what failed and how to reproduce the run, then the shrunk case as
  an Elixir term; `ExZarr.Fuzz.CorpusTest` replays every file.
  """
  import Bitwise, only: [<<<: 2]

  @doc "The default corpus directory."
  @spec dir() :: Path.t()
  def dir, do: Path.expand("test/fuzz/corpus", File.cwd!())

  @doc "The file name of a signature."
  @spec file_name(tuple()) :: String.t()
  def file_name(signature) do
    hash = signature |> :erlang.phash2(1 <<< 32) |> Integer.to_string(16) |> String.downcase()
    "#{elem(signature, 0)}-#{hash}.exs"
  end

  @doc "Saves a case unless a file for its signature exists; returns the path and whether it was new."
  @spec save(Path.t(), tuple(), map(), [String.t()]) :: {Path.t(), boolean()}
  def save(dir, signature, fuzz_case, notes) do
    path = Path.join(dir, file_name(signature))

    if File.exists?(path) do
      {path, false}
    else
      File.mkdir_p!(dir)
      comments = Enum.map_join(notes, "", &"# #{String.replace(&1, "\n", " ")}\n")

      term =
        inspect(fuzz_case, limit: :infinity, printable_limit: :infinity, pretty: true, width: 98)

      File.write!(path, comments <> term <> "\n")
      {path, true}
    end
  end

  @doc "The cases of a corpus directory: `[{path, case}]`."
  @spec load(Path.t()) :: [{Path.t(), map()}]
  def load(dir) do
    dir
    |> Path.join("*.exs")
    |> Path.wildcard()
    |> Enum.sort()
    |> Enum.map(fn path -> {path, path |> File.read!() |> Code.eval_string() |> elem(0)} end)
  end
end
