defmodule ExZarr.Application do
  @moduledoc false
  use Application

  @impl true
  def start(_type, _args) do
    children = [ExZarr.Storage.TableOwner]
    Supervisor.start_link(children, strategy: :one_for_one, name: ExZarr.Supervisor)
  end
end
