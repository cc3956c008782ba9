defmodule ExZarr.Test.Prop do
  @moduledoc """
  Runs PropEr (erlang-proper) properties inside ExUnit.

      ExZarr.Test.Prop.check(:proper_types.integer(0, 10), fn n -> n >= 0 end)
  """
  import ExUnit.Assertions

  @doc "Checks `property` for `numtests` generated values; fails the test with the counterexample."
  @spec check(term(), (term() -> boolean()), pos_integer()) :: true
  def check(generator, property, numtests \\ 200) do
    prop = :proper.forall(generator, fn value -> property.(value) == true end)

    result =
      :proper.quickcheck(prop, [{:numtests, numtests}, {:on_output, fn _fmt, _args -> :ok end}])

    assert result == true, "property failed; counterexample: #{inspect(:proper.counterexample())}"
  end

  @doc "A generator of `n`-tuples of integers in `lo..hi`."
  @spec tuple_of(non_neg_integer(), integer(), integer()) :: term()
  def tuple_of(n, lo, hi),
    do:
      :proper_types.bind(
        :proper_types.vector(n, :proper_types.integer(lo, hi)),
        &List.to_tuple/1,
        false
      )
end
