defmodule ExZarr.Test.Schedulers do
  @moduledoc false
  # Which schedulers a call runs on: native calls choose between the calling scheduler and a
  # dirty one by the work they estimate, and the tests check the choice.

  @doc """
  Whether `fun`, run in a process of its own, hands work to a dirty scheduler (a dirty native
  call ends in `:erts_internal.dirty_nif_finalizer/1`, which tracing of the process's
  scheduling shows). Returns `{dirty?, fun's result}`.
  """
  @spec dirty?((() -> term())) :: {boolean(), term()}
  def dirty?(fun) do
    parent = self()
    pid = spawn_link(fn -> receive(do: (:go -> send(parent, {:result, self(), fun.()}))) end)
    :erlang.trace(pid, true, [:running])
    send(pid, :go)
    result = receive(do: ({:result, ^pid, result} -> result))
    ref = :erlang.trace_delivered(pid)
    receive(do: ({:trace_delivered, ^pid, ^ref} -> :ok))
    {dirty_events?(pid, false), result}
  end

  defp dirty_events?(pid, seen) do
    receive do
      {:trace, ^pid, _in_out, {:erts_internal, :dirty_nif_finalizer, 1}} ->
        dirty_events?(pid, true)

      {:trace, ^pid, _in_out, _mfa} ->
        dirty_events?(pid, seen)
    after
      0 -> seen
    end
  end
end
