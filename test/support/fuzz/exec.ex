defmodule ExZarr.Fuzz.Exec do
  @moduledoc """
  Runs a fuzz case inside the child BEAM, one step per call, so that the parent knows which
  step was running when the child died.

  A case is a map: `setup` (`{:create, opts}` or `{:store, [{key, value}]}`, a value being
  `{:json, doc}` (see `ExZarr.Fuzz.Json`) or bytes (see `ExZarr.Fuzz.Bytes`)), `seed_write`
  (write data into the new array before mutating), `mutations` (see `ExZarr.Fuzz.Mutate`)
  and `ops` (see `ExZarr.Fuzz.Steps`). `start/1` makes a runner process holding the case's
  memory store; each `next/2` runs one step in it and classifies what happened:

    * `:ok` (`:ok` or `{:ok, _}`), `:error` (`{:error, _}`), `:skip` (step not applicable)
    * `{:raise, info}`: an exception, exit or throw (`info`: kind, message, the innermost
      ExZarr frame) — a bug for every function that is not a `!` variant
    * `{:bad_return, text}`: any other return; `{:wrong, why}`: a wrong successful result
    * `{:oom, text}`: the step's process went over its heap limit (`+hmax` of the child)
    * `:timeout`: the step took longer than the given time (the runner is killed)
  """
  alias ExZarr.Fuzz.{Bytes, Json, Mutate, Steps}
  alias ExZarr.Storage

  @doc "The steps of a case, in the order they run."
  @spec steps(map()) :: [term()]
  def steps(fuzz_case) do
    seed_write = if fuzz_case[:seed_write], do: [:seed_write], else: []
    [:setup] ++ seed_write ++ [:mutate | List.wrap(fuzz_case[:ops])]
  end

  @doc "Starts the runner of a case; returns its pid."
  @spec start(map()) :: pid()
  def start(fuzz_case) do
    spawn(fn ->
      {:ok, store} = Storage.new(:memory, owner: self())
      loop(%{store: store, node: nil}, fuzz_case, steps(fuzz_case))
    end)
  end

  @doc """
  Runs the next step: `{:step, step, outcome}`; `{:stop, step, outcome}` when the runner is
  gone after it (killed at the timeout, or died with a linked process); `:done` when no step
  is left.
  """
  @spec next(pid(), timeout()) :: {:step | :stop, term(), term()} | :done
  def next(runner, timeout) do
    ref = Process.monitor(runner)
    send(runner, {:next, self(), ref})

    receive do
      {^ref, :done} -> finish(ref, runner, :done)
      {^ref, step} -> await(ref, runner, step, timeout)
      {:DOWN, ^ref, _, _, reason} -> {:stop, :unknown, down_outcome(reason)}
    end
  end

  defp await(ref, runner, step, timeout) do
    receive do
      {^ref, :result, outcome} -> finish(ref, runner, {:step, step, outcome})
      {:DOWN, ^ref, _, _, reason} -> {:stop, step, down_outcome(reason)}
    after
      timeout ->
        Process.exit(runner, :kill)
        finish(ref, runner, {:stop, step, :timeout})
    end
  end

  defp finish(ref, _runner, reply) do
    Process.demonitor(ref, [:flush])
    reply
  end

  defp loop(state, fuzz_case, steps) do
    receive do
      {:next, from, ref} ->
        case steps do
          [] ->
            send(from, {ref, :done})

          [step | rest] ->
            send(from, {ref, step})
            {outcome, state} = attempt(step, state, fuzz_case)
            send(from, {ref, :result, outcome})
            loop(state, fuzz_case, rest)
        end
    end
  end

  defp attempt(step, state, fuzz_case) do
    {result, state} = run(step, state, fuzz_case)
    {classify(result), state}
  rescue
    e -> {{:raise, raise_info(e.__struct__, Exception.message(e), __STACKTRACE__)}, state}
  catch
    :exit, reason -> {exit_outcome(reason, __STACKTRACE__), state}
    kind, value -> {{:raise, raise_info(kind, inspect(value), __STACKTRACE__)}, state}
  end

  defp run(:setup, state, %{setup: {:create, opts}}), do: Steps.run({:create, opts}, state)

  defp run(:setup, state, %{setup: {:store, entries}}) do
    Enum.each(entries, fn {key, value} -> Storage.put(state.store, key, value(value)) end)
    {:skip, state}
  end

  defp run(:seed_write, state, _case),
    do: Steps.run({:set_slice, :fit, {:box, 0, [], false}}, state)

  defp run(:mutate, state, fuzz_case) do
    Mutate.apply_all(state.store, List.wrap(fuzz_case[:mutations]), state.node)
    # What was opened before the mutations is stale now: the case opens the store again.
    {:skip, %{state | node: nil}}
  end

  defp run(step, state, _case), do: Steps.run(step, state)

  defp value({:json, doc}), do: Json.encode(doc)
  defp value(desc), do: Bytes.build(desc)

  @doc "The outcome of a returned value."
  @spec classify(term()) :: term()
  def classify(:ok), do: :ok
  def classify({:ok, _}), do: :ok
  def classify({:error, _}), do: :error
  def classify(:skip), do: :skip
  def classify({:wrong, why}), do: {:wrong, why}
  def classify(other), do: {:bad_return, short(other)}

  # The runner died: killed by its heap limit, or by a linked process (a task) that crashed.
  defp down_outcome({e, stack}) when is_exception(e) and is_list(stack),
    do: {:raise, raise_info(e.__struct__, Exception.message(e), stack)}

  defp down_outcome(reason), do: exit_outcome(reason, [])

  defp exit_outcome(reason, stack) do
    if killed?(reason),
      do: {:oom, short(reason)},
      else: {:raise, raise_info(:exit, short(reason), stack)}
  end

  # A process of the step killed by its heap limit shows up as a :killed exit.
  defp killed?(:killed), do: true
  defp killed?({reason, _}), do: killed?(reason)
  defp killed?(_), do: false

  defp raise_info(kind, message, stack) do
    %{
      kind: kind,
      message: message |> String.split("\n") |> hd() |> String.slice(0, 200),
      frame: frame(stack)
    }
  end

  # The innermost frame in ExZarr's own code (not the fuzzer's), else the innermost one.
  defp frame(stack) do
    own =
      Enum.find(stack, fn {m, _, _, _} ->
        name = Atom.to_string(m)

        String.starts_with?(name, "Elixir.ExZarr.") and
          not String.starts_with?(name, "Elixir.ExZarr.Fuzz.")
      end)

    case own || List.first(stack) do
      {m, f, a, loc} ->
        arity = if is_list(a), do: length(a), else: a
        "#{inspect(m)}.#{f}/#{arity} (#{loc[:file]}:#{loc[:line]})"

      nil ->
        "?"
    end
  end

  defp short(term), do: inspect(term, limit: 8, printable_limit: 100) |> String.slice(0, 300)
end
