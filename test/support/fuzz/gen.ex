defmodule ExZarr.Fuzz.Gen do
  @moduledoc """
  Thin Elixir names for the PropEr (erlang-proper) type combinators the fuzz generators use.

  A generator is a PropEr type: `:proper_gen.pick/3` draws a value from it (deterministic for a
  seed) and `:proper_shrink` shrinks a drawn value (see `ExZarr.Fuzz.Shrink`). Plain terms are
  generators of themselves; tuples and lists of generators generate tuples and lists.

      iex> {:ok, n} = :proper_gen.pick(ExZarr.Fuzz.Gen.int(1, 3), 10, {1, 2, 3})
      iex> n in 1..3
      true
  """

  @type t :: term()

  @doc "An integer in `lo..hi`."
  @spec int(integer(), integer()) :: t()
  def int(lo, hi), do: :proper_types.integer(lo, hi)

  @doc "One of the given values (shrinks towards the first)."
  @spec elements([term()]) :: t()
  def elements(values), do: :proper_types.elements(values)

  @doc "A value of one of the given generators (shrinks towards the first)."
  @spec oneof([t()]) :: t()
  def oneof(gens), do: :proper_types.oneof(gens)

  @doc "A value of one of the generators, picked with the given weights."
  @spec frequency([{pos_integer(), t()}]) :: t()
  def frequency(weighted), do: :proper_types.frequency(weighted)

  @doc "A list of values of `gen`, of a length growing with the generation size."
  @spec list(t()) :: t()
  def list(gen), do: :proper_types.list(gen)

  @doc "A list of `lo..hi` values of `gen` (shrinks towards shorter lists)."
  @spec list(t(), non_neg_integer(), non_neg_integer()) :: t()
  def list(gen, lo, hi), do: bind(int(lo, hi), &vector(&1, gen))

  @doc "A list of exactly `n` values of `gen`."
  @spec vector(non_neg_integer(), t()) :: t()
  def vector(n, gen), do: :proper_types.vector(n, gen)

  @doc "A boolean."
  @spec bool() :: t()
  def bool, do: :proper_types.boolean()

  @doc "A binary of random bytes (length growing with the size)."
  @spec bytes() :: t()
  def bytes, do: :proper_types.binary()

  @doc "A float (any finite value)."
  @spec float() :: t()
  def float, do: :proper_types.float()

  @doc "The value `fun.(x)` for `x` drawn from `gen`; `fun` may return another generator."
  @spec bind(t(), (term() -> t())) :: t()
  def bind(gen, fun), do: :proper_types.bind(gen, fun, false)

  @doc "The value `fun.(x)` for `x` drawn from `gen` (a plain function of the value)."
  @spec map(t(), (term() -> term())) :: t()
  def map(gen, fun), do: bind(gen, fun)

  @doc "A generator built on demand (for recursive generators)."
  @spec lazy((() -> t())) :: t()
  def lazy(fun), do: :proper_types.lazy(fun)

  @doc "The current generation size (for sizing recursive generators)."
  @spec sized((non_neg_integer() -> t())) :: t()
  def sized(fun), do: :proper_types.sized(fun)

  @doc "A map from the fixed keys to values drawn from their generators."
  @spec fixed_map([{term(), t()}]) :: t()
  def fixed_map(pairs) do
    {keys, gens} = Enum.unzip(pairs)
    map(gens, fn values -> Map.new(Enum.zip(keys, values)) end)
  end
end
