defmodule ExZarr.Fuzz.CorpusTest do
  @moduledoc """
  Replays every case of the fuzzer's regression corpus (test/fuzz/corpus/, one file per kind
  of failure found; see `ExZarr.Fuzz.Corpus`) in capped child BEAMs: each must now run
  without a raise, bad return, wrong result, heap blow-up, hang or child death.
  """
  use ExUnit.Case, async: true

  alias ExZarr.Fuzz.{Corpus, Runner}

  @moduletag :fuzz
  @files Corpus.dir() |> Corpus.load() |> Enum.map(&elem(&1, 0))
  for file <- @files, do: @external_resource(file)

  setup_all do
    corpus = Corpus.load(Corpus.dir())
    results = Runner.replay(Enum.map(corpus, &elem(&1, 1)))
    %{results: Map.new(Enum.zip(Enum.map(corpus, &elem(&1, 0)), results))}
  end

  for file <- @files do
    @tag corpus_file: file
    test "corpus case #{Path.basename(file)}", ctx do
      failures = Map.fetch!(ctx.results, ctx.corpus_file)

      assert failures == [],
             "#{Path.relative_to_cwd(ctx.corpus_file)}:\n" <>
               Enum.map_join(failures, "\n", fn {sig, step, detail} ->
                 "  #{Runner.describe(sig)} at #{inspect(step, limit: 8)}: #{inspect(detail, limit: 12)}"
               end)
    end
  end
end
