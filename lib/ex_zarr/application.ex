defmodule ExZarr.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    # TableOwner keeps memory/ETS tables alive; Lock grants the node-wide locks of
    # read-modify-writes; the dynamic supervisor runs the processes of stores that have one
    # (the cache, zip writers).
    children = [
      ExZarr.Storage.TableOwner,
      ExZarr.Storage.Lock,
      {DynamicSupervisor, name: ExZarr.Storage.Supervisor, strategy: :one_for_one}
    ]

    Supervisor.start_link(children, strategy: :one_for_one, name: ExZarr.Supervisor)
  end
end
