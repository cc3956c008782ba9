defmodule ExZarr.Fuzz.Child do
  @moduledoc """
  A child BEAM for fuzz cases, started with `:peer` (connected over its standard I/O, so the
  test node needs no distribution) and capped so that a case cannot take the machine down:

    * the whole VM: an address-space limit (`ulimit -v`, `memory_mb`, default 2048)
    * every process: a heap limit (`+hmax`, 512 MiB; the process is killed beyond)
    * ExZarr's own sanity limit (`:max_bytes` of `ExZarr.Limits`): 64 MiB, so that a size
      the library should have refused shows up as a death instead of a big allocation

  A case runs step by step (`ExZarr.Fuzz.Exec`); when the VM dies the step that was running
  is known, and the last lines the VM wrote (an allocator's "Cannot allocate", the shell's
  exit status of a signal) say how it died.
  """
  alias ExZarr.Fuzz.Exec

  @enforce_keys [:peer, :os_pid, :log]
  defstruct [:peer, :os_pid, :log]

  @type t :: %__MODULE__{peer: pid(), os_pid: String.t(), log: Path.t()}
  @max_heap_words div(512 * 1024 * 1024, 8)
  @library_max_bytes 64 * 1024 * 1024

  @doc "Starts a child BEAM with ExZarr loaded and started."
  @spec start(keyword()) :: {:ok, t()} | {:error, term()}
  def start(opts \\ []) do
    memory_kb = Keyword.get(opts, :memory_mb, 2048) * 1024
    name = "exzarr-fuzz-#{System.pid()}-#{System.unique_integer([:positive])}.log"
    log = Path.join(System.tmp_dir!(), name)
    File.write!(log, "")
    erl = System.find_executable("erl")
    # No exec: the shell stays to write erl's exit status (a signal shows as 128 + n).
    script = ~s(ulimit -v #{memory_kb}; "$0" "$@" 2>>"#{log}"; echo "exit status $?" >>"#{log}")

    args =
      Enum.flat_map(code_paths(), &[~c"-pa", &1]) ++
        Enum.map(~w(+MIscs 64 +hmax #{@max_heap_words} -kernel logger_level none), &to_charlist/1)

    with {:ok, peer, _node} <-
           :peer.start(%{
             connection: :standard_io,
             exec: {~c"/bin/sh", [~c"-c", to_charlist(script), to_charlist(erl)]},
             args: args,
             env: [{~c"ERL_CRASH_DUMP_SECONDS", ~c"0"}]
           }) do
      :ok = :peer.call(peer, Application, :put_env, [:ex_zarr, :max_bytes, @library_max_bytes])
      {:ok, _} = :peer.call(peer, Application, :ensure_all_started, [:ex_zarr], 30_000)
      os_pid = :peer.call(peer, :os, :getpid, [])
      {:ok, %__MODULE__{peer: peer, os_pid: List.to_string(os_pid), log: log}}
    end
  catch
    :exit, reason -> {:error, reason}
  end

  # The test node's code paths outside OTP (Elixir, the project's _build): the child's
  # default path has OTP and Debian's Erlang libraries (jiffy, proper).
  defp code_paths do
    root = :code.root_dir()
    Enum.reject(:code.get_path(), &List.starts_with?(&1, root))
  end

  @doc """
  Runs a case: `{:done, steps}`, `{:died, steps, how}` (the last step is the one that was
  running) or `{:hung, steps}` (the child stopped answering); `steps` is `[{step, outcome}]`.
  A step over `step_timeout` ms is a `:timeout` outcome.
  """
  @spec run_case(t(), map(), timeout()) ::
          {:done, list()} | {:died, list(), String.t()} | {:hung, list()}
  def run_case(child, fuzz_case, step_timeout) do
    case call(child, Exec, :start, [fuzz_case], 30_000) do
      {:ok, runner} -> steps(child, runner, step_timeout, [])
      {:died, how} -> {:died, [{:start, :death}], how}
      :hung -> {:hung, []}
    end
  end

  defp steps(child, runner, step_timeout, acc) do
    case call(child, Exec, :next, [runner, step_timeout], step_timeout + 10_000) do
      {:ok, :done} -> {:done, Enum.reverse(acc)}
      {:ok, {:step, step, outcome}} -> steps(child, runner, step_timeout, [{step, outcome} | acc])
      {:ok, {:stop, step, outcome}} -> {:done, Enum.reverse([{step, outcome} | acc])}
      {:died, how} -> {:died, Enum.reverse([{:running, :death} | acc]), how}
      :hung -> {:hung, Enum.reverse(acc)}
    end
  end

  defp call(child, m, f, a, timeout) do
    {:ok, :peer.call(child.peer, m, f, a, timeout)}
  catch
    :exit, _ -> if Process.alive?(child.peer), do: :hung, else: {:died, death_note(child)}
  end

  # The last lines the child wrote to stderr, waiting a moment for the shell's exit status.
  defp death_note(child) do
    Enum.reduce_while(1..20, "", fn _, _ ->
      text = File.read(child.log) |> elem(1) |> to_string()

      if text =~ "exit status" do
        {:halt, text}
      else
        Process.sleep(50)
        {:cont, text}
      end
    end)
    |> String.split("\n", trim: true)
    |> Enum.take(-3)
    |> Enum.join(" | ")
  end

  @doc "Stops the child (killing its OS process) and removes its log."
  @spec stop(t()) :: :ok
  def stop(%__MODULE__{} = child) do
    ref = Process.monitor(child.peer)
    System.cmd("kill", ["-9", child.os_pid], stderr_to_stdout: true)

    # The peer goes down when the shell around the VM has exited, that is after it wrote
    # the exit status to the log.
    receive do
      {:DOWN, ^ref, _, _, _} -> :ok
    after
      5_000 -> catch_exit(fn -> :peer.stop(child.peer) end)
    end

    File.rm(child.log)
    :ok
  end

  defp catch_exit(fun) do
    fun.()
  catch
    :exit, _ -> :ok
  end
end
