defmodule ExZarr.Fuzz.Shrink do
  @moduledoc """
  Shrinks a failing fuzz case with PropEr's own shrinkers: the case drawn with
  `:proper_gen.pick(type, size, seed)` is drawn again in PropEr's internal form and shrunk
  step by step (`:proper_shrink.shrink/3`), keeping each smaller case that still fails the
  same way, until no shrinker finds a smaller one or the time is up.

  `fails?` gets a clean case and an accumulator (the runner's child BEAM) and returns
  `{boolean, acc}`.
  """

  @doc "The smallest failing case found: `{case, acc, accepted_shrinks}`."
  @spec shrink(term(), pos_integer(), term(), acc, (term(), acc -> {boolean(), acc}), integer()) ::
          {term(), acc, non_neg_integer()}
        when acc: term()
  def shrink(type, size, seed, acc, fails?, deadline) do
    :proper.global_state_init_size_seed(size, seed)
    {:ok, imm} = :proper_gen.safe_generate(type)
    {imm, acc, shrinks} = loop(imm, type, :init, acc, fails?, deadline, 0)
    {clean(imm), acc, shrinks}
  after
    :proper.global_state_erase()
  end

  defp loop(imm, type, state, acc, fails?, deadline, shrinks) do
    with false <- System.monotonic_time(:millisecond) > deadline,
         {candidates, next} when next != :done <- :proper_shrink.shrink(imm, type, state) do
      # Shrinkers may offer the case itself again: only smaller ones are tried.
      current = clean(imm)
      candidates = Enum.reject(candidates, &(clean(&1) == current))

      case first_failing(candidates, acc, fails?, deadline) do
        {nil, acc} -> loop(imm, type, next, acc, fails?, deadline, shrinks)
        {smaller, acc} -> loop(smaller, type, :init, acc, fails?, deadline, shrinks + 1)
      end
    else
      _ -> {imm, acc, shrinks}
    end
  end

  defp first_failing(candidates, acc, fails?, deadline) do
    Enum.reduce_while(candidates, {nil, acc}, fn imm, {nil, acc} ->
      if System.monotonic_time(:millisecond) > deadline do
        {:halt, {nil, acc}}
      else
        case fails?.(clean(imm), acc) do
          {true, acc} -> {:halt, {imm, acc}}
          {false, acc} -> {:cont, {nil, acc}}
        end
      end
    end)
  end

  defp clean(imm), do: :proper_gen.clean_instance(imm)
end
