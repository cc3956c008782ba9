defmodule ExZarr.Fuzz.Runner do
  @moduledoc """
  Drives a fuzz run: draws cases (`ExZarr.Fuzz.Cases`, case `i` of seed `s` drawn with
  `:proper_gen.pick(type, size, {s, i, 0})`, so any case can be drawn again), runs them one
  after another in a capped child BEAM (`ExZarr.Fuzz.Child`), starting a new child when one
  dies or hangs, and counts the outcome of every step. The first case of each kind of
  failure (its signature) is shrunk (`ExZarr.Fuzz.Shrink`) and saved to the corpus
  (`ExZarr.Fuzz.Corpus`) when the corpus has no case for it yet.

  Failures: a raise (from a function that is not a `!` variant), a return that is neither
  `:ok`, `{:ok, _}` nor `{:error, _}`, a wrong result, a process over its heap limit, a step
  over its time limit (confirmed by a second run with twice the time), a child death.

  Options: `seed`, `seconds` (drawing and running), `max_cases`, `shrink_seconds` (in all),
  `step_timeout` (ms), `memory_mb` (the child's address space), `corpus` (a directory, or
  `nil` not to save), `progress` (a function called with a map after each case).
  """
  alias ExZarr.Fuzz.{Cases, Child, Corpus, Exec, Shrink}

  @outcomes [:ok, :error, :skip, :raise, :bad_return, :wrong, :oom, :timeout, :death]

  @type finding :: %{
          signature: tuple(),
          step: term(),
          detail: term(),
          case: map(),
          index: non_neg_integer(),
          shrinks: non_neg_integer(),
          path: Path.t() | nil,
          new?: boolean()
        }

  @doc "Runs the fuzzer; returns a report (see `format/1`)."
  @spec run(keyword()) :: map()
  def run(opts) do
    seed = Keyword.fetch!(opts, :seed)
    started = now()
    deadline = started + Keyword.get(opts, :seconds, 45) * 1000
    state = %{child: nil, opts: opts, counts: Map.new(@outcomes, &{&1, 0}), children: 0}

    {state, cases, findings} =
      explore(state, seed, 0, deadline, Keyword.get(opts, :max_cases, 100_000), %{})

    shrink_deadline = now() + Keyword.get(opts, :shrink_seconds, 30) * 1000
    {state, findings} = finish_findings(state, seed, Map.values(findings), shrink_deadline)
    if state.child, do: Child.stop(state.child)

    %{
      seed: seed,
      cases: cases,
      counts: state.counts,
      children: state.children,
      findings: Enum.sort_by(findings, & &1.index),
      seconds: div(now() - started, 1000)
    }
  end

  defp explore(state, seed, i, deadline, max_cases, findings) do
    if i >= max_cases or now() > deadline do
      {state, i, findings}
    else
      t0 = now()
      fuzz_case = draw(seed, i)
      t1 = now()
      {state, steps} = run_confirmed(state, fuzz_case)
      state = count(state, steps)
      progress(state, i, t1 - t0, now() - t1, steps)

      findings =
        steps
        |> bugs()
        |> Enum.reduce(findings, fn {signature, step, detail}, acc ->
          Map.put_new(acc, signature, %{
            signature: signature,
            step: step,
            detail: detail,
            case: fuzz_case,
            index: i
          })
        end)

      explore(state, seed, i + 1, deadline, max_cases, findings)
    end
  end

  @doc """
  Runs the given cases (the corpus) one after another in child BEAMs; returns, for each, its
  failures as `bugs/1` gives them.
  """
  @spec replay([map()], keyword()) :: [[{tuple(), term(), term()}]]
  def replay(cases, opts \\ []) do
    state = %{child: nil, opts: opts, counts: Map.new(@outcomes, &{&1, 0}), children: 0}

    {results, state} =
      Enum.map_reduce(cases, state, fn fuzz_case, state ->
        {state, steps} = run_confirmed(state, fuzz_case)
        {bugs(steps), state}
      end)

    if state.child, do: Child.stop(state.child)
    results
  end

  @doc "Case `i` of seed `seed` (and the size it is drawn with)."
  @spec draw(integer(), non_neg_integer()) :: map()
  def draw(seed, i) do
    {:ok, fuzz_case} = :proper_gen.pick(Cases.fuzz_case(), size(i), {seed, i, 0})
    fuzz_case
  end

  defp progress(state, i, draw_ms, run_ms, steps) do
    case Keyword.get(state.opts, :progress) do
      nil -> :ok
      fun -> fun.(%{index: i, draw_ms: draw_ms, run_ms: run_ms, bugs: bugs(steps)})
    end
  end

  defp size(i), do: 5 + rem(i, 36)

  # Runs a case; a timeout or hang is run again in a new child with twice the time.
  defp run_confirmed(state, fuzz_case) do
    timeout = Keyword.get(state.opts, :step_timeout, 5_000)
    {state, steps} = run_case(state, fuzz_case, timeout)

    if Enum.any?(steps, fn {_, outcome} -> outcome == :timeout end),
      do: run_case(restart(state), fuzz_case, 2 * timeout),
      else: {state, steps}
  end

  # Runs a case in the current child (started when needed); `{state, [{step, outcome}]}`
  # where a death is the outcome `{:death, how}` of the step that was running.
  defp run_case(state, fuzz_case, timeout) do
    state = ensure_child(state)
    names = Exec.steps(fuzz_case)

    case Child.run_case(state.child, fuzz_case, timeout) do
      {:done, steps} ->
        state = if Enum.any?(steps, &match?({_, :timeout}, &1)), do: restart(state), else: state
        {state, steps}

      {:died, steps, how} ->
        step = Enum.at(names, length(steps) - 1, :start)
        {restart(state), Enum.drop(steps, -1) ++ [{step, {:death, how}}]}

      {:hung, steps} ->
        {restart(state), steps ++ [{Enum.at(names, length(steps), :start), :timeout}]}
    end
  end

  defp ensure_child(%{child: nil} = state) do
    {:ok, child} = Child.start(memory_mb: Keyword.get(state.opts, :memory_mb, 2048))
    %{state | child: child, children: state.children + 1}
  end

  defp ensure_child(state), do: state

  defp restart(state) do
    if state.child, do: Child.stop(state.child)
    %{state | child: nil}
  end

  defp count(state, steps) do
    Enum.reduce(steps, state, fn {_step, outcome}, st ->
      %{st | counts: Map.update!(st.counts, category(outcome), &(&1 + 1))}
    end)
  end

  defp category(outcome) when is_atom(outcome), do: outcome
  defp category({kind, _}), do: kind

  @doc "The failures among the outcomes of a case: `[{signature, step, detail}]`."
  @spec bugs([{term(), term()}]) :: [{tuple(), term(), term()}]
  def bugs(steps) do
    for {step, outcome} <- steps,
        signature = signature(step, outcome),
        do: {signature, step, outcome}
  end

  # What identifies a kind of failure: for a raise the exception and the innermost ExZarr
  # function (not the line, which moves with edits), else the kind and the step.
  defp signature(_step, {:raise, info}),
    do: {:raise, info.kind, Regex.replace(~r/ \(.*\)$/, info.frame, "")}

  defp signature(step, {:death, how}), do: {:death, label(step), death_cause(how)}

  defp signature(step, {kind, _}) when kind in [:bad_return, :wrong, :oom],
    do: {kind, label(step)}

  defp signature(step, :timeout), do: {:timeout, label(step)}
  defp signature(_step, _outcome), do: nil

  # The VM's own last words (an allocator failing) rather than the shell's exit status, with
  # the sizes left out.
  defp death_cause(how) do
    lines = String.split(how, " | ")
    line = Enum.find(lines, hd(lines), &(not String.starts_with?(&1, "exit status")))
    line |> String.trim() |> then(&Regex.replace(~r/\d+/, &1, "N"))
  end

  @doc "A short name of a step."
  @spec label(term()) :: String.t()
  def label({:group, {op, _}}), do: "group.#{op}"
  def label({:group, op}), do: "group.#{op}"
  def label(step) when is_tuple(step), do: to_string(elem(step, 0))
  def label(step), do: to_string(step)

  # Shrinks and saves the findings whose signature the corpus has no case for (in turn,
  # sharing the time left); the others keep the case as found.
  defp finish_findings(state, seed, findings, deadline) do
    dir = Keyword.get(state.opts, :corpus, Corpus.dir())

    known = MapSet.new(findings, & &1.signature)
    state = Map.merge(state, %{known: known, side: []})

    {findings, state} =
      Enum.map_reduce(Enum.sort_by(findings, & &1.index), state, fn finding, state ->
        saved? = dir != nil and File.exists?(Path.join(dir, Corpus.file_name(finding.signature)))

        {finding, state} =
          if saved?,
            do: {Map.put(finding, :shrinks, 0), state},
            else: shrink(state, seed, finding, deadline)

        {save(dir, seed, finding), state}
      end)

    side = Enum.map(Enum.reverse(state.side), &save(dir, seed, Map.put(&1, :shrinks, 0)))
    {state, findings ++ side}
  end

  defp shrink(state, seed, finding, deadline) do
    # A candidate failing some other new way is a finding of its own (kept as it is).
    fails? = fn candidate, st ->
      {st, steps} = run_confirmed(st, candidate)
      bugs = bugs(steps)

      {Enum.any?(bugs, fn {sig, _, _} -> sig == finding.signature end),
       side_findings(st, bugs, candidate, finding.index)}
    end

    {small, state, shrinks} =
      Shrink.shrink(
        Cases.fuzz_case(),
        size(finding.index),
        {seed, finding.index, 0},
        state,
        fails?,
        deadline
      )

    {%{finding | case: small} |> Map.put(:shrinks, shrinks), state}
  end

  defp side_findings(state, bugs, candidate, index) do
    Enum.reduce(bugs, state, fn {sig, step, detail}, st ->
      if MapSet.member?(st.known, sig) do
        st
      else
        side = %{signature: sig, step: step, detail: detail, case: candidate, index: index}
        %{st | known: MapSet.put(st.known, sig), side: [side | st.side]}
      end
    end)
  end

  defp save(nil, _seed, finding), do: Map.merge(finding, %{path: nil, new?: false})

  defp save(dir, seed, finding) do
    notes = [
      "ExZarr fuzz regression case: #{describe(finding.signature)}",
      "first seen at step #{inspect(finding.step, limit: 6)}: #{inspect(finding.detail, limit: 12)}",
      "found as case #{finding.index} of seed #{seed} (EXZARR_FUZZ_SEED=#{seed}) or while shrinking it, " <>
        "#{finding.shrinks} shrinks"
    ]

    {path, new?} = Corpus.save(dir, finding.signature, finding.case, notes)
    Map.merge(finding, %{path: path, new?: new?})
  end

  defp now, do: System.monotonic_time(:millisecond)

  @doc "A one-line description of a failure signature."
  @spec describe(tuple()) :: String.t()
  def describe({:raise, kind, frame}), do: "raises #{inspect(kind)} in #{frame}"
  def describe({:death, step, how}), do: "the VM dies in #{step}: #{how}"
  def describe({:timeout, step}), do: "#{step} takes longer than the step time limit"
  def describe({:oom, step}), do: "#{step} goes over the per-process heap limit"
  def describe({:bad_return, step}), do: "#{step} returns neither :ok, {:ok, _} nor {:error, _}"
  def describe({:wrong, step}), do: "#{step} returns a wrong result"

  @doc "The report as text: seed, counts, and each failure with its (shrunk) case."
  @spec format(map()) :: String.t()
  def format(report) do
    counts = Enum.map_join(@outcomes, ", ", &"#{&1} #{report.counts[&1]}")

    header =
      "fuzz: seed #{report.seed}, #{report.cases} cases in #{report.seconds} s " <>
        "(#{report.children} child BEAMs); steps: #{counts}\n"

    failures =
      Enum.map(report.findings, fn f ->
        saved =
          if f.path,
            do: " -> #{Path.relative_to_cwd(f.path)}#{if f.new?, do: " (new)", else: ""}",
            else: ""

        "\n* #{describe(f.signature)}\n  case #{f.index}, step #{inspect(f.step, limit: 6)}: " <>
          "#{inspect(f.detail, limit: 12)}#{saved}\n  " <>
          (inspect(f.case, limit: 40, printable_limit: 120) |> String.replace("\n", "\n  ")) <>
          "\n"
      end)

    IO.iodata_to_binary([header | failures])
  end
end
