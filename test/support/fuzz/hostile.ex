defmodule ExZarr.Fuzz.Hostile do
  @moduledoc """
  Generators of hostile JSON values (as `ExZarr.Fuzz.Json` terms) and hostile Elixir terms:
  integers at the edges of every machine width, floats and non-finite numbers, strings that
  are empty, huge or not UTF-8, values of the wrong type and deep nesting.
  """
  import Bitwise
  import ExZarr.Fuzz.Gen

  @edge_ints [
    0,
    1,
    -1,
    2,
    3,
    7,
    8,
    64,
    65,
    255,
    256,
    65_536,
    1 <<< 31,
    (1 <<< 31) - 1,
    3 <<< 30,
    1 <<< 32,
    (1 <<< 32) + 1,
    1 <<< 40,
    (1 <<< 53) + 1,
    (1 <<< 63) - 1,
    1 <<< 63,
    1 <<< 64,
    (1 <<< 64) + 1,
    -(1 <<< 31),
    -(1 <<< 63),
    -(1 <<< 63) - 1,
    1_000_000_000_000_000_000_000_000_000_000
  ]

  @raw_numbers [
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "1e400",
    "-1e400",
    "-0.0",
    "-0",
    "1e-400",
    "01",
    "1.",
    ".5",
    "0x10",
    "+1",
    "1E+2",
    "123456789012345678901234567890e5"
  ]

  @doc "An integer: mostly an edge of some machine width, else a small or any integer."
  @spec int() :: ExZarr.Fuzz.Gen.t()
  def int,
    do: frequency([{6, elements(@edge_ints)}, {2, int(-16, 16)}, {1, :proper_types.integer()}])

  @doc "A non-negative integer, often at an edge."
  @spec size() :: ExZarr.Fuzz.Gen.t()
  def size, do: frequency([{5, elements(Enum.filter(@edge_ints, &(&1 >= 0)))}, {3, int(0, 20)}])

  @doc "Any JSON number: edge integers, floats, and literals no JSON library writes."
  @spec number() :: ExZarr.Fuzz.Gen.t()
  def number do
    frequency([
      {5, int()},
      {2, elements([0.5, -1.5, 1.0e308, -1.0e308, 5.0e-324, 2.0e-308, 1.0e15, 4.0e9, -0.0])},
      {1, float()},
      {3, map(elements(@raw_numbers), &{:raw, &1})}
    ])
  end

  @doc "A JSON string: empty, special words, huge, control characters, invalid UTF-8."
  @spec string() :: ExZarr.Fuzz.Gen.t()
  def string do
    frequency([
      {3,
       elements([
         "",
         "a",
         "NaN",
         "Infinity",
         "-Infinity",
         "0x7fc00000",
         "0xffffffffffffffff",
         "null",
         "..",
         "../..",
         "/",
         "c/0",
         "zarr.json",
         "\u0000",
         "é",
         "💥"
       ])},
      {1, map(int(1, 200_000), &{:long_string, &1})},
      {1, elements([<<0xFF, 0xFE>>, <<0xC0, 0x80>>, <<0xED, 0xA0, 0x80>>, "a\\u0000b"])},
      {1, bytes()}
    ])
  end

  @doc "A JSON scalar of any type."
  @spec scalar() :: ExZarr.Fuzz.Gen.t()
  def scalar, do: oneof([number(), string(), elements([:null, true, false])])

  @doc "Any JSON value (recursive), including deep nesting and huge lists."
  @spec value() :: ExZarr.Fuzz.Gen.t()
  def value do
    sized(fn size -> value(min(size, 12)) end)
  end

  defp value(0), do: scalar()

  defp value(n) do
    frequency([
      {6, scalar()},
      {2, lazy(fn -> list(value(div(n, 3)), 0, 4) end)},
      {2, lazy(fn -> map(list({key(), value(div(n, 3))}, 0, 4), &Map.new/1) end)},
      {1, map({int(1, 300_000), scalar()}, fn {depth, v} -> {:nest, depth, v} end)},
      {1, map({int(1, 100_000), scalar()}, fn {n, v} -> {:repeat, n, v} end)},
      {1, map({key(), scalar(), scalar()}, fn {k, a, b} -> {:pairs, [{k, a}, {k, b}]} end)}
    ])
  end

  @doc "An object key: metadata keys of both formats, or any string."
  @spec key() :: ExZarr.Fuzz.Gen.t()
  def key do
    frequency([
      {3, elements(~w(zarr_format node_type shape data_type chunk_grid chunk_key_encoding
                      fill_value codecs attributes dimension_names storage_transformers chunks
                      dtype compressor filters order dimension_separator name configuration
                      id level must_understand consolidated_metadata metadata kind))},
      {1, string()}
    ])
  end

  @doc "A value of the wrong type for whatever it replaces (including a hostile number)."
  @spec wrong() :: ExZarr.Fuzz.Gen.t()
  def wrong, do: oneof([value(), elements([[], %{}, [[]], [:null], [1.5], ["1"]])])

  @doc "A hostile Elixir term for an API argument of any expected type."
  @spec term() :: ExZarr.Fuzz.Gen.t()
  def term do
    oneof([
      int(),
      elements([
        nil,
        :all,
        :none,
        true,
        1.5,
        :nan,
        "",
        "x",
        ~c"abc",
        [],
        %{},
        {},
        {nil},
        {:all},
        [1, 2],
        {1.5, 2},
        [start: 1],
        %{start: {0}},
        {:some, :record, 1}
      ]),
      map(list(int(), 0, 4), &List.to_tuple/1),
      map(int(65, 70), &Tuple.duplicate(0, &1)),
      list(int(), 0, 3)
    ])
  end
end
