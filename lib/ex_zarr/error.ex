defmodule ExZarr.Error do
  @moduledoc "Raised by the `!` functions; `reason` is what the non-bang function returns in `{:error, reason}`."
  defexception [:reason]

  @impl true
  def message(%{reason: reason}), do: "ExZarr error: " <> inspect(reason)
end
