defmodule ExZarr.OptionsTest do
  use ExUnit.Case, async: true

  alias ExZarr.Options

  doctest Options

  test "options that are not a keyword list are refused whole" do
    for bad <- [%{a: 1}, [1], [{"a", 1}], :a, nil, "opts"] do
      assert Options.check(bad, [:a]) == {:error, {:invalid_options, bad}}
      assert Options.check_keyword(bad) == {:error, {:invalid_options, bad}}
    end

    assert Options.check([], []) == :ok
    assert Options.check_keyword([]) == :ok
  end

  test "the first option neither allowed nor passed on is named" do
    assert Options.check([a: 1, b: 2, c: 3], [:a]) == {:error, {:unknown_option, :b}}
    assert Options.check([a: 1, b: 2], [:a], [:b]) == :ok
  end

  @valid [
    max_concurrency: [1, 64],
    parallel: [1],
    timeout: [0, 4_294_967_295, :infinity],
    coalesce_gap: [0, 1_000_000],
    ordered: [true, false],
    overwrite: [true, false],
    recursive: [true, false],
    write_empty_chunks: [true, false],
    single_writer: [true, false],
    use_consolidated: [nil, true, false],
    zarr_format: [nil, 2, 3],
    level: [:chunk, :inner],
    prefix: ["", "a/b"]
  ]

  @invalid [
    max_concurrency: [0, -1, 1.5, :infinity, nil],
    parallel: [0, "4"],
    timeout: [-1, 4_294_967_296, 1.0, nil, :never],
    coalesce_gap: [-1, 1.5, nil],
    ordered: [nil, 1, "true"],
    overwrite: [nil, :yes],
    recursive: [0],
    write_empty_chunks: ["false"],
    single_writer: [nil],
    use_consolidated: [:auto, 1],
    zarr_format: [1, 4, "3"],
    level: [:shard, nil],
    prefix: [nil, :a, ~c"a"]
  ]

  test "shared options are checked where they are allowed" do
    for {key, values} <- @valid, value <- values do
      assert Options.check([{key, value}], [key]) == :ok, inspect({key, value})
    end

    for {key, values} <- @invalid, value <- values do
      assert Options.check([{key, value}], [key]) == {:error, {:invalid_option, key, value}},
             inspect({key, value})
    end
  end

  test "passed-on options are left to the layer that reads them" do
    for {key, [value | _]} <- @invalid do
      assert Options.check([{key, value}], [], [key]) == :ok
    end
  end
end
