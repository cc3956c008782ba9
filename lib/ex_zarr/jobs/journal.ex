defmodule ExZarr.Jobs.Journal do
  @moduledoc false
  # The journal of a resumable map job: one empty object per unit done, under
  # `<array prefix>/.exzarr_jobs/<job id>/<unit number>` in the target's store. `nil` is no
  # journal (a job without `resume: true`): every function then does nothing.

  alias ExZarr.Storage

  @doc "The journal prefix of job `id` for the array at `array_prefix`."
  @spec prefix(String.t(), String.t()) :: String.t()
  def prefix("", id), do: ".exzarr_jobs/#{id}/"

  def prefix(array_prefix, id),
    do: "#{String.trim_trailing(array_prefix, "/")}/.exzarr_jobs/#{id}/"

  @doc "The units (`{n, box}`) the journal does not record as done."
  @spec pending(Storage.t(), String.t() | nil, [{non_neg_integer(), map()}]) ::
          {:ok, list()} | {:error, term()}
  def pending(_store, nil, units), do: {:ok, units}

  def pending(store, journal, units) do
    with {:ok, keys} <- Storage.list(store, journal) do
      done = MapSet.new(keys, &String.replace_prefix(&1, journal, ""))
      {:ok, Enum.reject(units, fn {n, _box} -> MapSet.member?(done, Integer.to_string(n)) end)}
    end
  end

  @doc "Records unit `n` as done."
  @spec done(Storage.t(), String.t() | nil, non_neg_integer()) :: :ok | {:error, term()}
  def done(_store, nil, _n), do: :ok
  def done(store, journal, n), do: Storage.put(store, journal <> Integer.to_string(n), "")

  @doc "Deletes the journal of a completed job."
  @spec clear(Storage.t(), String.t() | nil) :: :ok | {:error, term()}
  def clear(_store, nil), do: :ok

  def clear(store, journal) do
    with {:ok, keys} <- Storage.list(store, journal) do
      Enum.reduce_while(keys, :ok, fn key, :ok ->
        case Storage.delete(store, key) do
          :ok -> {:cont, :ok}
          error -> {:halt, error}
        end
      end)
    end
  end
end
